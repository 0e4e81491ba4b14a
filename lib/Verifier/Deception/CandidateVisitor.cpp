//===- CandidateVisitor.cpp - the AST checks of one candidate -------------===//

#include "CandidateVisitor.h"
#include "DeceptionRules.h"

#include "clang/AST/Attr.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/StmtCXX.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"

using namespace clang;

namespace dice {
namespace {

/// The outermost named namespace of `decl` ("at", "torch", "std", ...);
/// empty for the global namespace. Inline namespaces (std::__cxx11) and
/// anonymous ones are looked through.
llvm::StringRef topNamespace(const Decl *decl) {
  llvm::StringRef top;
  for (const DeclContext *dc = decl->getDeclContext(); dc; dc = dc->getParent())
    if (const auto *ns = dyn_cast<NamespaceDecl>(dc))
      if (!ns->isInline() && !ns->isAnonymousNamespace())
        top = ns->getName();
  return top;
}

/// The name of the class `decl` is a member of, or "".
llvm::StringRef enclosingClass(const Decl *decl) {
  if (const auto *record = dyn_cast<CXXRecordDecl>(decl->getDeclContext()))
    return record->getName();
  return "";
}

std::string nameOf(const NamedDecl *decl) { return decl->getNameAsString(); }

/// `decl` as the kernel it instantiates: a specialization maps to its
/// template so that launching `k<float>` reaches the kernel `k`.
const FunctionDecl *canonicalFunction(const FunctionDecl *decl) {
  if (const FunctionDecl *pattern = decl->getTemplateInstantiationPattern())
    decl = pattern;
  return decl->getCanonicalDecl();
}

/// The variable an lvalue expression names at its base: `x`, `x[i]`, `x.f`.
const VarDecl *baseVariable(const Expr *expr) {
  while (expr) {
    expr = expr->IgnoreParenImpCasts();
    if (const auto *ref = dyn_cast<DeclRefExpr>(expr))
      return dyn_cast<VarDecl>(ref->getDecl());
    if (const auto *sub = dyn_cast<ArraySubscriptExpr>(expr))
      expr = sub->getBase();
    else if (const auto *member = dyn_cast<MemberExpr>(expr);
             member && !member->isArrow())
      expr = member->getBase();
    else
      return nullptr;
  }
  return nullptr;
}

/// Collects the functions and kernels a function body refers to: direct
/// calls, kernel launches, addresses taken (cudaLaunchKernel, tables).
class ReferenceCollector : public RecursiveASTVisitor<ReferenceCollector> {
public:
  bool shouldVisitTemplateInstantiations() const { return true; }

  bool VisitDeclRefExpr(DeclRefExpr *ref) {
    if (auto *fn = dyn_cast<FunctionDecl>(ref->getDecl()))
      functions.push_back(fn);
    else if (auto *var = dyn_cast<VarDecl>(ref->getDecl()))
      variables.push_back(var);
    return true;
  }
  bool VisitOverloadExpr(OverloadExpr *overload) {
    for (NamedDecl *decl : overload->decls()) {
      if (auto *tmpl = dyn_cast<FunctionTemplateDecl>(decl))
        functions.push_back(tmpl->getTemplatedDecl());
      else if (auto *fn = dyn_cast<FunctionDecl>(decl))
        functions.push_back(fn);
    }
    return true;
  }
  bool VisitMemberExpr(MemberExpr *member) {
    if (auto *fn = dyn_cast<FunctionDecl>(member->getMemberDecl()))
      functions.push_back(fn);
    return true;
  }
  bool VisitCXXConstructExpr(CXXConstructExpr *construct) {
    functions.push_back(construct->getConstructor());
    return true;
  }

  std::vector<FunctionDecl *> functions;
  std::vector<VarDecl *> variables;
};

} // namespace

CandidateVisitor::CandidateVisitor(ASTContext &context)
    : context(context), sm(context.getSourceManager()) {}

bool CandidateVisitor::isCandidateCode(SourceLocation loc) const {
  if (loc.isInvalid())
    return false;
  // Tokens the candidate spelled: plain code, macro arguments, its own macros.
  if (sm.isWrittenInMainFile(sm.getSpellingLoc(loc)))
    return true;
  if (!loc.isMacroID() || !sm.isInMainFile(sm.getExpansionLoc(loc)))
    return false;
  // A header macro the candidate invoked: `cublasSgemm` (an alias of
  // cublasSgemm_v2) is the candidate's call, while what TORCH_CHECK or
  // AT_DISPATCH_* expand to is torch's own plumbing.
  SourceLocation outermost = loc;
  while (outermost.isMacroID()) {
    SourceLocation up = sm.getImmediateExpansionRange(outermost).getBegin();
    if (!up.isMacroID()) {
      break;
    }
    outermost = up;
  }
  llvm::StringRef macro =
      Lexer::getImmediateMacroName(outermost, sm, context.getLangOpts());
  return !macro.starts_with("TORCH_") && !macro.starts_with("AT_") &&
         !macro.starts_with("C10_");
}

unsigned CandidateVisitor::lineOf(SourceLocation loc) const {
  return sm.getPresumedLineNumber(sm.getFileLoc(loc));
}

void CandidateVisitor::report(DeceptionKind kind, SourceLocation loc,
                              std::string message) {
  findings.push_back({kind, lineOf(loc), std::move(message)});
}

void CandidateVisitor::run(llvm::ArrayRef<Decl *> topLevel) {
  for (Decl *decl : topLevel)
    TraverseDecl(decl);
  checkReachability();
}

bool CandidateVisitor::VisitFunctionDecl(FunctionDecl *decl) {
  if (!decl->doesThisDeclarationHaveABody() ||
      !sm.isInMainFile(sm.getExpansionLoc(decl->getLocation())))
    return true;
  if (decl->hasAttr<CUDAGlobalAttr>())
    kernels.insert(canonicalFunction(decl));
  if (decl->getDeclName().isIdentifier() && decl->getName() == "dice_forward" &&
      decl->getDeclContext()->getRedeclContext()->isTranslationUnit())
    entries.push_back(decl);
  return true;
}

bool CandidateVisitor::VisitVarDecl(VarDecl *decl) {
  if (!decl->hasGlobalStorage() || isa<ParmVarDecl>(decl) ||
      !sm.isInMainFile(sm.getExpansionLoc(decl->getLocation())))
    return true;
  // Shared memory lives for one block; constant memory is uploaded by the
  // host, a per-call parameter block.
  if (decl->hasAttr<CUDASharedAttr>() || decl->hasAttr<CUDAConstantAttr>())
    return true;
  if (decl->isConstexpr() || decl->getType().isConstant(context) ||
      decl->getType()->isReferenceType())
    return true;
  if (decl->hasAttr<CUDADeviceAttr>() && !decl->hasAttr<CUDAHostAttr>() &&
      !decl->hasAttr<HIPManagedAttr>()) {
    deviceGlobals.insert(decl->getCanonicalDecl());
    return true;
  }
  std::string what = decl->isStaticLocal() ? "static local"
                     : decl->isStaticDataMember() ? "static member"
                                                   : "global";
  report(DeceptionKind::PersistentState, decl->getLocation(),
         "mutable " + what + " `" + nameOf(decl) +
             "` keeps its value between calls (results can be cached)");
  return true;
}

bool CandidateVisitor::VisitCallExpr(CallExpr *call) {
  SourceLocation loc = call->getExprLoc();
  if (!isCandidateCode(loc))
    return true;
  if (const FunctionDecl *callee = call->getDirectCallee())
    checkCallee(callee, loc, call);
  // Arrays passed to a function decay to pointers it may write through;
  // non-const references likewise.
  const FunctionDecl *callee = call->getDirectCallee();
  for (unsigned i = 0; i < call->getNumArgs(); ++i) {
    const Expr *arg = call->getArg(i);
    const VarDecl *var = baseVariable(arg);
    if (!var)
      continue;
    bool byReference = false;
    if (callee && i < callee->getNumParams()) {
      QualType type = callee->getParamDecl(i)->getType();
      byReference = type->isReferenceType() &&
                    !type->getPointeeType().isConstQualified();
    }
    if (var->getType()->isArrayType() || byReference)
      writtenGlobals.insert(var->getCanonicalDecl());
  }
  return true;
}

bool CandidateVisitor::VisitDeclRefExpr(DeclRefExpr *ref) {
  // Reading the environment needs no call: `environ` is a variable.
  const auto *var = dyn_cast<VarDecl>(ref->getDecl());
  if (!var || !var->getDeclName().isIdentifier() ||
      !isCandidateCode(ref->getLocation()) ||
      !var->getDeclContext()->getRedeclContext()->isTranslationUnit() ||
      !isEnvironmentVariable(var->getName()))
    return true;
  report(DeceptionKind::SystemAccess, ref->getLocation(),
         "`" + nameOf(var) + "` reads the process environment");
  return true;
}

void CandidateVisitor::checkCallee(const FunctionDecl *callee, SourceLocation loc,
                                   const CallExpr *call) {
  if (isa<CXXConversionDecl>(callee) || callee->hasAttr<CUDAGlobalAttr>())
    return;
  // The rules name library functions; the candidate's own helpers may share
  // a name (`write`, `sum`) without being them.
  if (sm.isInMainFile(sm.getExpansionLoc(callee->getLocation())))
    return;
  std::string name = nameOf(callee);
  llvm::StringRef ns = topNamespace(callee);
  llvm::StringRef cls = enclosingClass(callee);
  bool cFunction = ns.empty() && cls.empty();

  if (isSymbolWriteCall(name) && call->getNumArgs() > 0)
    if (const VarDecl *var = baseVariable(call->getArg(0)))
      writtenGlobals.insert(var->getCanonicalDecl());

  if (isStreamOrGraphCall(name)) {
    report(DeceptionKind::StreamOrGraph, loc,
           "`" + name + "` moves work off the stream the verifier times");
    return;
  }
  if ((cFunction || ns == "std") && isThreadCall(name)) {
    report(DeceptionKind::Threads, loc,
           "`" + name + "` runs work on another host thread");
    return;
  }
  if ((cFunction || ns == "std") && isSystemCall(name)) {
    report(DeceptionKind::SystemAccess, loc,
           "`" + name + "` reaches the process, files, network or environment");
    return;
  }
  if (ns == "std" && isFilesystemNamespaceMember(callee)) {
    report(DeceptionKind::SystemAccess, loc,
           "`std::filesystem::" + name + "` reads or writes files");
    return;
  }
  if (std::optional<std::string> library = vendorLibraryOf(name, ns, cls)) {
    report(DeceptionKind::VendorLibrary, loc,
           "`" + name + "` computes in " + *library + ", not in a candidate kernel");
    return;
  }
  if ((ns == "at" || ns == "torch") && !isAllowedTorchCall(name)) {
    std::string qualified = callee->getQualifiedNameAsString();
    report(DeceptionKind::TorchCompute, loc,
           "`" + qualified + "` computes in PyTorch, not in a candidate kernel");
  }
}

bool CandidateVisitor::VisitCXXConstructExpr(CXXConstructExpr *construct) {
  SourceLocation loc = construct->getBeginLoc();
  if (!isCandidateCode(loc))
    return true;
  const CXXRecordDecl *record = construct->getConstructor()->getParent();
  std::string name = record->getNameAsString();
  llvm::StringRef ns = topNamespace(record);
  if (ns == "std" && (name == "thread" || name == "jthread"))
    report(DeceptionKind::Threads, loc, "`std::" + name + "` starts a host thread");
  else if (ns == "std" && isFileStreamClass(name))
    report(DeceptionKind::SystemAccess, loc, "`std::" + name + "` opens a file");
  else if ((ns == "at" || ns == "c10") && name == "CUDAGraph")
    report(DeceptionKind::StreamOrGraph, loc,
           "`at::cuda::CUDAGraph` replays captured work outside the timed stream");
  return true;
}

bool CandidateVisitor::VisitGCCAsmStmt(GCCAsmStmt *stmt) {
  if (!isCandidateCode(stmt->getAsmLoc()))
    return true;
  if (std::optional<std::string> opcode = findControlFlowPtx(stmt->getAsmString()))
    report(DeceptionKind::InlinePtxControl, stmt->getAsmLoc(),
           "inline PTX `" + *opcode +
               "` changes control flow behind the compiler's back");
  return true;
}

void CandidateVisitor::noteWrite(const Expr *target) {
  if (const VarDecl *var = baseVariable(target))
    writtenGlobals.insert(var->getCanonicalDecl());
}

bool CandidateVisitor::VisitBinaryOperator(BinaryOperator *op) {
  if (op->isAssignmentOp())
    noteWrite(op->getLHS());
  return true;
}

bool CandidateVisitor::VisitUnaryOperator(UnaryOperator *op) {
  // `&x` hands out a pointer (atomicAdd(&x, 1), memcpy): count it a write.
  if (op->isIncrementDecrementOp() || op->getOpcode() == UO_AddrOf)
    noteWrite(op->getSubExpr());
  return true;
}

void CandidateVisitor::checkReachability() {
  for (const VarDecl *var : deviceGlobals)
    if (writtenGlobals.contains(var))
      report(DeceptionKind::PersistentState, var->getLocation(),
             "`__device__` variable `" + nameOf(var) +
                 "` is written and keeps its value between calls (results "
                 "can be cached)");
  if (entries.empty())
    return;
  if (kernels.empty()) {
    report(DeceptionKind::NoKernel, entries.front()->getLocation(),
           "the source defines no `__global__` kernel; `dice_forward` must "
           "compute in its own kernels");
    return;
  }
  // Everything `dice_forward` can reach through calls, launches, addresses
  // taken and the initialisers of variables it names.
  llvm::DenseSet<const FunctionDecl *> reached;
  llvm::DenseSet<const VarDecl *> seenVars;
  std::vector<const FunctionDecl *> worklist(entries.begin(), entries.end());
  while (!worklist.empty()) {
    const FunctionDecl *fn = worklist.back();
    worklist.pop_back();
    if (!reached.insert(fn).second)
      continue;
    reached.insert(canonicalFunction(fn));
    // Library code cannot launch the candidate's kernels except through
    // what the candidate passes it, which its own body already names.
    const FunctionDecl *def = fn->getDefinition();
    if (!def || !sm.isInMainFile(sm.getExpansionLoc(def->getLocation())))
      continue;
    ReferenceCollector refs;
    refs.TraverseStmt(def->getBody());
    for (size_t i = 0; i < refs.variables.size(); ++i) {
      const VarDecl *var = refs.variables[i];
      if (seenVars.insert(var).second && var->getInit())
        refs.TraverseStmt(const_cast<Expr *>(var->getInit()));
    }
    for (const FunctionDecl *callee : refs.functions) {
      worklist.push_back(callee);
      worklist.push_back(canonicalFunction(callee));
    }
  }
  for (const FunctionDecl *kernel : kernels)
    if (!reached.contains(kernel))
      report(DeceptionKind::UnreachableKernel, kernel->getLocation(),
             "kernel `" + nameOf(kernel) +
                 "` is never launched from `dice_forward`; the work must run "
                 "in the candidate's kernels");
}

} // namespace dice
