//===- DeceptionAnalysis.cpp - static checks of candidate kernels ---------===//
//
// Clang parses the candidate in CUDA host mode: the host compilation still
// holds every __device__ and __global__ body in its AST, and needs no
// libdevice. Only code spelled in the candidate is judged; what torch macros
// expand to (TORCH_CHECK, AT_DISPATCH_*) is the library's, not the model's.
//
//===----------------------------------------------------------------------===//

#include "dice/Deception/DeceptionAnalysis.h"
#include "CandidateVisitor.h"
#include "DeceptionRules.h"

#include "clang/Basic/Diagnostic.h"
#include "clang/Basic/FileManager.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendActions.h"
#include "clang/Lex/PPCallbacks.h"
#include "clang/Lex/Preprocessor.h"
#include "clang/Tooling/Tooling.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/VirtualFileSystem.h"

#include <algorithm>
#include <chrono>
#include <cstring>

using namespace clang;

namespace dice {
namespace {

/// The candidate's name inside the in-memory file system.
constexpr const char *kCandidatePath = "/dice-candidate/candidate.cu";

/// Keeps the first error clang reports, with its line.
class FirstErrorCollector : public DiagnosticConsumer {
public:
  void HandleDiagnostic(DiagnosticsEngine::Level level,
                        const Diagnostic &info) override {
    DiagnosticConsumer::HandleDiagnostic(level, info);
    if (level < DiagnosticsEngine::Error || !message.empty())
      return;
    llvm::SmallString<256> text;
    info.FormatDiagnostic(text);
    std::string where;
    if (info.hasSourceManager() && info.getLocation().isValid()) {
      const SourceManager &sm = info.getSourceManager();
      PresumedLoc loc = sm.getPresumedLoc(sm.getFileLoc(info.getLocation()));
      if (loc.isValid())
        where = sm.isInMainFile(sm.getFileLoc(info.getLocation()))
                    ? "line " + std::to_string(loc.getLine()) + ": "
                    : std::string(loc.getFilename()) + ":" +
                          std::to_string(loc.getLine()) + ": ";
    }
    message = where + text.str().str();
  }

  std::string message;
};

/// OpenMP pragmas vanish from the AST without -fopenmp; catch them as text.
/// The preprocessor directives the candidate wrote: OpenMP pragmas (host
/// threads), and includes that name a file by its path instead of a header
/// (a file read at compile time: saved answers, `/dev/zero` for the build).
class DirectiveFinder : public PPCallbacks {
public:
  DirectiveFinder(const SourceManager &sm, std::vector<DeceptionFinding> &out,
                  std::vector<DeceptionFinding> &pathIncludes)
      : sm(sm), findings(out), pathIncludes(pathIncludes) {}

  void PragmaDirective(SourceLocation loc, PragmaIntroducerKind) override {
    if (!sm.isWrittenInMainFile(loc))
      return;
    bool invalid = false;
    const char *text = sm.getCharacterData(loc, &invalid);
    if (invalid)
      return;
    llvm::StringRef rest(text, strnlen(text, 256));
    rest = rest.split('\n').first;
    rest.consume_front("#");
    rest = rest.ltrim();
    if (!rest.consume_front("pragma") && !rest.consume_front("_Pragma"))
      return;
    rest = rest.ltrim(" \t(\"");
    if (rest.starts_with("omp"))
      findings.push_back({DeceptionKind::Threads, sm.getSpellingLineNumber(loc),
                          "OpenMP pragma runs host threads"});
  }

  void InclusionDirective(SourceLocation hashLoc, const Token &, StringRef fileName,
                          bool, CharSourceRange, OptionalFileEntryRef, StringRef,
                          StringRef, const Module *, bool,
                          SrcMgr::CharacteristicKind) override {
    checkPath(hashLoc, fileName, "#include");
  }

  void EmbedDirective(SourceLocation hashLoc, StringRef fileName, bool,
                      OptionalFileEntryRef, const LexEmbedParametersResult &) override {
    checkPath(hashLoc, fileName, "#embed");
  }

private:
  void checkPath(SourceLocation hashLoc, StringRef fileName, StringRef directive) {
    if (!sm.isWrittenInMainFile(hashLoc) || !isFilePathInclude(fileName))
      return;
    pathIncludes.push_back({DeceptionKind::SystemAccess, sm.getSpellingLineNumber(hashLoc),
                            "`" + directive.str() + "` of `" + fileName.str() +
                                "` reads a file by its path at compile time, not a header"});
  }

  const SourceManager &sm;
  std::vector<DeceptionFinding> &findings;
  std::vector<DeceptionFinding> &pathIncludes;
};

class AnalysisConsumer : public ASTConsumer {
public:
  explicit AnalysisConsumer(std::vector<DeceptionFinding> &out, bool &noEntry)
      : findings(out), noEntry(noEntry) {}

  bool HandleTopLevelDecl(DeclGroupRef group) override {
    // Only what the candidate wrote: walking the whole TU would also walk
    // every torch header (or deserialize all of the PCH).
    for (Decl *decl : group)
      if (const SourceManager &sm = decl->getASTContext().getSourceManager();
          sm.isInMainFile(sm.getExpansionLoc(decl->getLocation())))
        topLevel.push_back(decl);
    return true;
  }

  void HandleTranslationUnit(ASTContext &context) override {
    CandidateVisitor visitor(context);
    visitor.run(topLevel);
    noEntry = !visitor.hasEntry();
    std::vector<DeceptionFinding> found = visitor.takeFindings();
    findings.insert(findings.end(), found.begin(), found.end());
  }

private:
  std::vector<DeceptionFinding> &findings;
  bool &noEntry;
  std::vector<Decl *> topLevel;
};

class AnalysisAction : public ASTFrontendAction {
public:
  AnalysisAction(std::vector<DeceptionFinding> &out,
                 std::vector<DeceptionFinding> &pathIncludes, bool &noEntry)
      : findings(out), pathIncludes(pathIncludes), noEntry(noEntry) {}

  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance &ci,
                                                 llvm::StringRef) override {
    ci.getPreprocessor().addPPCallbacks(
        std::make_unique<DirectiveFinder>(ci.getSourceManager(), findings, pathIncludes));
    return std::make_unique<AnalysisConsumer>(findings, noEntry);
  }

private:
  std::vector<DeceptionFinding> &findings;
  std::vector<DeceptionFinding> &pathIncludes;
  bool &noEntry;
};

/// The clang driver command shared by the PCH build and the analysis.
std::vector<std::string> driverCommand(const AnalysisOptions &options) {
  std::vector<std::string> cmd = {
      "clang++", "-x", "cuda", "--cuda-host-only", "-nocudalib",
      "--cuda-path=" + options.cudaPath, "--cuda-gpu-arch=" + options.gpuArch,
      "-std=c++17", "-w", "-Wno-unknown-cuda-version", "-fno-caret-diagnostics",
      "-resource-dir=" DICE_CLANG_RESOURCE_DIR,
      // What torch.utils.cpp_extension passes nvcc: without them c10::Half
      // and __half both define operators and comparisons are ambiguous.
      "-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
      "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__"};
  if (!options.prologueDir.empty())
    cmd.push_back("-I" + options.prologueDir);
  for (const std::string &dir : options.includeDirs)
    cmd.push_back("-isystem" + dir);
  cmd.insert(cmd.end(), options.extraArgs.begin(), options.extraArgs.end());
  return cmd;
}

std::string prologuePath(const AnalysisOptions &options) {
  return options.prologueDir + "/dice_prologue.h";
}

} // namespace

DeceptionReport analyzeCandidate(const std::string &cudaSource,
                                 const AnalysisOptions &options) {
  auto start = std::chrono::steady_clock::now();
  DeceptionReport report;
  std::vector<std::string> cmd = driverCommand(options);
  cmd.push_back("-fsyntax-only");
  if (!options.pchPath.empty()) {
    cmd.insert(cmd.end(), {"-include-pch", options.pchPath});
  } else if (!options.prologueDir.empty()) {
    cmd.insert(cmd.end(), {"-include", prologuePath(options)});
  }
  cmd.push_back(kCandidatePath);

  auto overlay = llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(
      llvm::vfs::getRealFileSystem());
  auto memory = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
  overlay->pushOverlay(memory);
  memory->addFile(kCandidatePath, 0, llvm::MemoryBuffer::getMemBufferCopy(cudaSource));
  auto files = llvm::makeIntrusiveRefCnt<FileManager>(FileSystemOptions(), overlay);

  bool noEntry = false;
  std::vector<DeceptionFinding> pathIncludes;
  FirstErrorCollector errors;
  tooling::ToolInvocation invocation(
      cmd, std::make_unique<AnalysisAction>(report.findings, pathIncludes, noEntry),
      files.get());
  invocation.setDiagnosticConsumer(&errors);
  bool parsed = invocation.run();
  if (!pathIncludes.empty()) {
    // A file included by its path decides the verdict whatever it holds,
    // so its content, which a parse error would quote, never reaches the
    // reason.
    if (!parsed || errors.getNumErrors() > 0 || noEntry)
      report.findings.clear();
    report.findings.insert(report.findings.end(), pathIncludes.begin(),
                           pathIncludes.end());
  } else if (!parsed || errors.getNumErrors() > 0) {
    report.outcome = AnalysisOutcome::CompileError;
    report.error = errors.message.empty() ? "clang could not parse the candidate"
                                          : errors.message;
    report.findings.clear();
  } else if (noEntry) {
    report.outcome = AnalysisOutcome::CompileError;
    report.error = "the source defines no `dice_forward`";
    report.findings.clear();
  }

  std::stable_sort(report.findings.begin(), report.findings.end(),
                   [](const DeceptionFinding &a, const DeceptionFinding &b) {
                     return a.line < b.line;
                   });
  // Template instantiations revisit the same code: one finding per line/kind.
  report.findings.erase(
      std::unique(report.findings.begin(), report.findings.end(),
                  [](const DeceptionFinding &a, const DeceptionFinding &b) {
                    return a.line == b.line && a.kind == b.kind &&
                           a.message == b.message;
                  }),
      report.findings.end());
  report.milliseconds = std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - start)
                            .count();
  return report;
}

std::optional<std::string> buildProloguePch(const AnalysisOptions &options,
                                            const std::string &outputPath) {
  std::vector<std::string> cmd = driverCommand(options);
  // Instantiating the headers' pending templates once, in the PCH, is what
  // makes each candidate parse in under a second instead of several.
  cmd.insert(cmd.end(), {"-Xclang", "-fpch-instantiate-templates", "-Xclang",
                         "-emit-pch", "-c", "-o", outputPath, prologuePath(options)});
  auto files = llvm::makeIntrusiveRefCnt<FileManager>(FileSystemOptions(),
                                                      llvm::vfs::getRealFileSystem());
  FirstErrorCollector errors;
  tooling::ToolInvocation invocation(cmd, std::make_unique<GeneratePCHAction>(),
                                     files.get());
  invocation.setDiagnosticConsumer(&errors);
  if (!invocation.run() || errors.getNumErrors() > 0)
    return errors.message.empty() ? "cannot precompile " + prologuePath(options)
                                  : errors.message;
  return std::nullopt;
}

} // namespace dice
