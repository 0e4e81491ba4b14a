//===- CandidateVisitor.h - the AST checks of one candidate -----*- C++ -*-===//
//
// Walks the declarations the candidate wrote (not the headers it included)
// and records each deception finding; then decides which kernels the entry
// point `dice_forward` can launch.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_LIB_DECEPTION_CANDIDATEVISITOR_H
#define DICE_LIB_DECEPTION_CANDIDATEVISITOR_H

#include "dice/Deception/DeceptionAnalysis.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace dice {

class CandidateVisitor : public clang::RecursiveASTVisitor<CandidateVisitor> {
public:
  explicit CandidateVisitor(clang::ASTContext &context);

  /// Visits `topLevel` (the candidate's top-level declarations) and runs
  /// the reachability check.
  void run(llvm::ArrayRef<clang::Decl *> topLevel);
  /// Whether the candidate defines `dice_forward`.
  bool hasEntry() const { return !entries.empty(); }
  std::vector<DeceptionFinding> takeFindings() { return std::move(findings); }

  // Template instantiations: a call can be resolved only there.
  bool shouldVisitTemplateInstantiations() const { return true; }

  bool VisitFunctionDecl(clang::FunctionDecl *decl);
  bool VisitVarDecl(clang::VarDecl *decl);
  bool VisitCallExpr(clang::CallExpr *call);
  bool VisitDeclRefExpr(clang::DeclRefExpr *ref);
  bool VisitCXXConstructExpr(clang::CXXConstructExpr *construct);
  bool VisitGCCAsmStmt(clang::GCCAsmStmt *stmt);
  bool VisitBinaryOperator(clang::BinaryOperator *op);
  bool VisitUnaryOperator(clang::UnaryOperator *op);

private:
  /// Whether `loc` was written by the candidate (not a header, not the body
  /// of a header's macro).
  bool isCandidateCode(clang::SourceLocation loc) const;
  unsigned lineOf(clang::SourceLocation loc) const;
  void report(DeceptionKind kind, clang::SourceLocation loc, std::string message);

  void checkCallee(const clang::FunctionDecl *callee, clang::SourceLocation loc,
                   const clang::CallExpr *call);
  void noteWrite(const clang::Expr *target);
  void checkReachability();

  clang::ASTContext &context;
  const clang::SourceManager &sm;
  std::vector<DeceptionFinding> findings;
  /// Kernels the candidate defines, canonical and deduplicated.
  llvm::SetVector<const clang::FunctionDecl *> kernels;
  std::vector<const clang::FunctionDecl *> entries;
  /// Non-const __device__ globals, and those the candidate writes to.
  llvm::SetVector<const clang::VarDecl *> deviceGlobals;
  llvm::DenseSet<const clang::VarDecl *> writtenGlobals;
};

} // namespace dice

#endif // DICE_LIB_DECEPTION_CANDIDATEVISITOR_H
