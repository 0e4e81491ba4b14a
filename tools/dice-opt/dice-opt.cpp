//===- dice-opt.cpp - the DICE compiler driver ----------------------------===//
//
// mlir-opt with the dice dialect and passes, plus the upstream dialects that
// torch-mlir's linalg-on-tensors output and the GPU lowering use. Options
// beyond mlir-opt's:
//
//   --dice-config=<dice.toml>  checked before any input is read, so that a
//                              bad configuration fails fast with file and line
//   --dice-db=<path>           the kernel database (dice.toml's `database`)
//   --dice-report=<file|->     the per-request report of dice-resolve
//   --dice-report-json=<file|-> the run as JSON: what dice-resolve decided
//                              (each candidate with its verdict) and every
//                              remark, warning and error (docs/passes.md)
//   --dice-progress            progress lines on stderr (default: on a terminal)
//   --dice-config-keys         print dice.toml's sections and keys as JSON, and
//                              exit (for programs that check keys early)
//
// The first three are shorthands: they set the `config`, `db` and `report`
// options of every dice pass in the pipeline that left them empty, so
// `--dump-pass-pipeline` prints a pipeline that reproduces the run on its
// own. Progress is this driver's service to the passes (Services.h).
//
//===----------------------------------------------------------------------===//

#include "dice/Config/Config.h"
#include "dice/Dialect/Dice/DiceDialect.h"
#include "dice/Driver/ParseGuard.h"
#include "dice/Driver/Services.h"
#include "dice/Transforms/Passes.h"
#include "dice/VerifierCore/VerdictStatus.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Location.h"
#ifdef DICE_STATIC_TOOLS
#include "mlir/Transforms/Passes.h"
#else
#include "mlir/InitAllPasses.h"
#endif
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <memory>
#include <mutex>

static llvm::cl::opt<std::string>
    configFile("dice-config",
               llvm::cl::desc("dice.toml of the dice passes (checked before "
                              "any input): sets their `config` option"),
               llvm::cl::value_desc("file"), llvm::cl::init(""));

static llvm::cl::opt<std::string> databaseFile(
    "dice-db",
    llvm::cl::desc("kernel database of the dice passes: sets their `db` "
                   "option (default: dice.toml's database)"),
    llvm::cl::value_desc("path"), llvm::cl::init(""));

static llvm::cl::opt<std::string> reportFile(
    "dice-report",
    llvm::cl::desc("write dice-resolve's per-request report ('-': stdout): "
                   "sets its `report` option"),
    llvm::cl::value_desc("file|-"), llvm::cl::init(""));

static llvm::cl::opt<std::string> reportJsonFile(
    "dice-report-json",
    llvm::cl::desc("write the run as JSON ('-': stdout): dice-resolve's "
                   "requests, their candidates and verdicts, and every "
                   "remark, warning and error"),
    llvm::cl::value_desc("file|-"), llvm::cl::init(""));

static llvm::cl::opt<bool> printConfigKeys(
    "dice-config-keys",
    llvm::cl::desc("print dice.toml's sections and their keys as JSON, and "
                   "exit"),
    llvm::cl::init(false));

static llvm::cl::opt<bool> progress(
    "dice-progress",
    llvm::cl::desc("print the dice passes' progress to stderr (model calls, "
                   "kernel builds, GPU checks); on by default when stderr is "
                   "a terminal"),
    llvm::cl::init(llvm::sys::Process::StandardErrIsDisplayed()));

namespace {

/// What `--dice-report-json` writes, gathered while the passes run: the
/// requests dice-resolve decided on and the diagnostics of every pass.
struct JsonReport {
  std::mutex mutex;
  llvm::json::Array requests;
  std::map<std::string, int64_t> totals;
  llvm::json::Array diagnostics;

  void addResolved(llvm::json::Object resolved) {
    std::lock_guard<std::mutex> lock(mutex);
    if (llvm::json::Array *rows = resolved.getArray("requests"))
      for (llvm::json::Value &row : *rows)
        requests.push_back(std::move(row));
    // Summed: a split input resolves once per part.
    if (llvm::json::Object *counts = resolved.getObject("totals"))
      for (auto &[key, value] : *counts)
        totals[key.str()] += value.getAsInteger().value_or(0);
  }

  void addDiagnostic(mlir::Diagnostic &diagnostic) {
    std::string location;
    llvm::raw_string_ostream os(location);
    if (auto file =
            diagnostic.getLocation()->findInstanceOf<mlir::FileLineColLoc>())
      os << file.getFilename().getValue() << ":" << file.getLine() << ":"
         << file.getColumn();
    else
      diagnostic.getLocation().print(os);
    std::lock_guard<std::mutex> lock(mutex);
    diagnostics.push_back(llvm::json::Object{
        {"severity", severityName(diagnostic.getSeverity())},
        {"location", location},
        {"message", diagnostic.str()}});
  }

  static llvm::StringRef severityName(mlir::DiagnosticSeverity severity) {
    switch (severity) {
    case mlir::DiagnosticSeverity::Error: return "error";
    case mlir::DiagnosticSeverity::Warning: return "warning";
    case mlir::DiagnosticSeverity::Remark: return "remark";
    case mlir::DiagnosticSeverity::Note: return "note";
    }
    return "note";
  }

  std::string text(bool succeeded) {
    std::lock_guard<std::mutex> lock(mutex);
    llvm::json::Object counts;
    for (const auto &[key, value] : totals)
      counts[key] = value;
    // The statuses a verdict may have, best first: a reader ranks
    // candidates by them rather than keep its own list.
    llvm::json::Array statuses;
    for (dice::VerdictStatus status : dice::kVerdictStatuses)
      statuses.push_back(std::string(dice::verdictStatusName(status)));
    llvm::json::Value whole = llvm::json::Object{
        {"succeeded", succeeded},
        {"verdict_statuses", std::move(statuses)},
        {"requests", std::move(requests)},
        {"totals", std::move(counts)},
        {"diagnostics", std::move(diagnostics)}};
    return llvm::formatv("{0:2}", whole).str() + "\n";
  }
};

/// dice-opt's services: the standard ones, with progress lines on stderr
/// when asked for, and dice-resolve's decisions kept for the JSON report.
class DiceOptServices : public mlir::dice::DiceServices {
public:
  DiceOptServices(mlir::Dialect *dialect, bool showProgress,
                  std::shared_ptr<JsonReport> report)
      : DiceServices(dialect), showProgress(showProgress),
        report(std::move(report)) {}

  void progress(const llvm::Twine &line) const override {
    if (!showProgress)
      return;
    // One write per line: build threads report too.
    std::string text = line.str() + "\n";
    llvm::errs() << text;
  }

  void recordResolved(llvm::json::Object resolved) const override {
    report->addResolved(std::move(resolved));
  }

private:
  bool showProgress;
  std::shared_ptr<JsonReport> report;
};

/// A pass option value in pass-pipeline syntax.
std::string quoteOptionValue(llvm::StringRef value) {
  if (value.find_first_of(" \t{}'\"") == llvm::StringRef::npos)
    return value.str();
  return "{" + value.str() + "}";
}

using Shorthands = std::pair<llvm::StringRef, std::string>[3];

/// `text` (a printed pipeline) with each shorthand written into the empty
/// option of that name of every dice pass, nested ones included.
std::string fillPrintedPipeline(llvm::StringRef text, const Shorthands &shorthands,
                                bool &changed) {
  std::string out;
  size_t at = 0;
  while (at < text.size()) {
    size_t name = text.find("dice-", at);
    size_t brace = name == llvm::StringRef::npos ? name : text.find_first_of("{,)", name);
    if (brace == llvm::StringRef::npos || text[brace] != '{') {
      size_t end = brace == llvm::StringRef::npos ? text.size() : brace + 1;
      out += text.slice(at, end).str();
      at = end;
      continue;
    }
    // The options, to the matching brace (values may be braced).
    size_t close = brace;
    for (int depth = 0; close < text.size(); ++close)
      if (text[close] == '{')
        ++depth;
      else if (text[close] == '}' && --depth == 0)
        break;
    out += text.slice(at, brace + 1).str();
    for (auto [index, item] : llvm::enumerate(
             mlir::dice::splitPassOptions(text.slice(brace + 1, close)))) {
      std::string written = item.str();
      for (const auto &[key, value] : shorthands)
        if (!value.empty() && item == (key + "=").str()) {
          written += quoteOptionValue(value);
          changed = true;
        }
      out += (index ? " " : "") + written;
    }
    at = close;
  }
  return out;
}

/// Writes the shorthands into the dice passes that declare the option and
/// left it empty, nested ones (dice-outline and dice-scaffold run inside
/// func.func) included: an option given in the pipeline wins. The pass
/// manager gives no access to nested passes, so the printed pipeline gets
/// the values and is parsed back. Sets `changed` when it wrote any.
mlir::LogicalResult applyShorthands(mlir::PassManager &pm, bool &changed) {
  Shorthands shorthands = {
      {"config", configFile}, {"db", databaseFile}, {"report", reportFile}};
  std::string printed;
  llvm::raw_string_ostream os(printed);
  pm.printAsTextualPipeline(os);
  std::string filled = fillPrintedPipeline(printed, shorthands, changed);
  if (!changed)
    return mlir::success();
  // Printed as `builtin.module(...)`; the passes go back inside that anchor.
  llvm::StringRef inner(filled);
  std::string anchor = (pm.getOpAnchorName() + "(").str();
  if (!inner.consume_front(anchor) || !inner.consume_back(")")) {
    llvm::errs() << "dice-opt: cannot read back the pass pipeline '" << filled
                 << "'\n";
    return mlir::failure();
  }
  pm.clear();
  return mlir::parsePassPipeline(inner, pm, llvm::errs());
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  mlir::DialectRegistry registry;
  mlir::dice::registerDiceDialects(registry);
#ifdef DICE_STATIC_TOOLS
  // A copy for another machine carries MLIR's generic passes
  // (canonicalize, cse, ...) only: every upstream pass would triple its size.
  mlir::registerTransformsPasses();
#else
  mlir::registerAllPasses();
#endif
  mlir::dice::registerDicePasses();
  mlir::dice::registerDicePipeline();

  auto [inputFile, outputFile] = mlir::registerAndParseCLIOptions(
      argc, argv, "DICE compiler driver\n", registry);

  if (printConfigKeys) {
    llvm::json::Object sections;
    for (const auto &[section, keys] : dice::configKeys())
      sections[section] = llvm::json::Array(keys);
    llvm::outs() << llvm::formatv("{0:2}",
                                  llvm::json::Value(std::move(sections)))
                 << "\n";
    return 0;
  }
  if (!configFile.empty()) {
    dice::Result<dice::Config> config = dice::loadConfigFile(configFile);
    if (!config) {
      llvm::errs() << config.error().format() << "\n";
      return 1;
    }
  }
  bool showProgress = progress;
  auto report = std::make_shared<JsonReport>();
  mlir::dice::registerDiceServices(
      registry, [showProgress, report](mlir::Dialect *d) {
        return std::make_unique<DiceOptServices>(d, showProgress, report);
      });

  mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();
  // torch-mlir emits ops of dialects MLIR has not got (tm_tensor's scatter,
  // scan, sort, attention; in generic form, since their custom syntax is
  // unknown here): they stay outside kernel requests, with a remark, and
  // the rest of the module compiles. An unknown op of a known dialect
  // (a typo of a linalg op) is still an error.
  config.allowUnregisteredDialects(true);
  // mlir-opt's own set-up (the pipeline from the command line, and its
  // --dump-pass-pipeline) runs first; the pipeline it printed did not have
  // the shorthands yet, so it is printed again with them.
  bool wantReport = !reportJsonFile.empty();
  config.setPassPipelineSetupFn([base = config, report,
                                 wantReport](mlir::PassManager &pm) {
    // Runs once the input is parsed, after mlir-opt's own handler is in
    // place, so this one sees each diagnostic first and hands it on.
    if (wantReport)
      pm.getContext()->getDiagEngine().registerHandler(
          [report](mlir::Diagnostic &diagnostic) {
            report->addDiagnostic(diagnostic);
            return mlir::failure();
          });
    bool changed = false;
    if (mlir::failed(base.setupPassPipeline(pm)) ||
        mlir::failed(applyShorthands(pm, changed)))
      return mlir::failure();
    if (changed && base.shouldDumpPassPipeline()) {
      llvm::errs() << "// with --dice-config, --dice-db and --dice-report:\n";
      pm.dump();
      llvm::errs() << "\n";
    }
    return mlir::success();
  });
  // What mlir-opt's own main does around MlirOptMain.
  if (config.shouldShowDialects()) {
    llvm::outs() << "Available Dialects: ";
    llvm::interleave(registry.getDialectNames(), llvm::outs(), ",");
    llvm::outs() << "\n";
    return 0;
  }
  if (config.shouldListPasses()) {
    mlir::printRegisteredPasses();
    return 0;
  }
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFile, &errorMessage);
  if (!input) {
    llvm::errs() << errorMessage << "\n";
    return 1;
  }
  // MLIR's own parsers crash on some malformed ops (ParseGuard.h): the
  // input is tried in a child process first, so that dice-opt reports it.
  if (std::optional<mlir::dice::ParserCrash> crash = mlir::dice::findParserCrash(
          input->getBuffer(), input->getBufferIdentifier(), registry,
          config.inputSplitMarker())) {
    llvm::errs() << crash->diagnostics << "dice-opt: error: "
                 << input->getBufferIdentifier()
                 << ": MLIR's parser crashed on this input (signal "
                 << crash->signal
                 << "), after the errors above: malformed syntax of an op "
                    "whose parser does not survive it\n";
    return 1;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFile, &errorMessage);
  if (!output) {
    llvm::errs() << errorMessage << "\n";
    return 1;
  }
  bool succeeded = mlir::succeeded(
      mlir::MlirOptMain(output->os(), std::move(input), registry, config));
  // Written whether the run succeeded or not: its errors are in it.
  if (wantReport) {
    const mlir::dice::DiceServices standard(nullptr);
    if (llvm::Error failed =
            standard.writeArtifact(reportJsonFile, report->text(succeeded))) {
      llvm::errs() << "dice-opt: cannot write " << reportJsonFile << ": "
                   << llvm::toString(std::move(failed)) << "\n";
      return 1;
    }
  }
  if (!succeeded)
    return 1;
  output->keep();
  return 0;
}
