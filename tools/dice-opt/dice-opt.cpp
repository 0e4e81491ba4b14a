//===- dice-opt.cpp - the DICE compiler driver ----------------------------===//
//
// mlir-opt with the dice dialect and passes, plus the upstream dialects that
// torch-mlir's linalg-on-tensors output and the GPU lowering use. Options
// beyond mlir-opt's, the defaults of every dice pass (pass options override
// them):
//
//   --dice-config=<dice.toml>  checked before any input is read, so that a
//                              bad configuration fails fast with file and line
//   --dice-db=<path>           the kernel database (dice.toml's `database`)
//   --dice-report=<file|->     the per-request report of dice-resolve
//   --dice-progress            progress lines on stderr (default: on a terminal)
//
//===----------------------------------------------------------------------===//

#include "Dice/DiceDialect.h"
#include "Passes.h"
#include "dice/Config/Config.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

static llvm::cl::opt<std::string>
    configFile("dice-config",
               llvm::cl::desc("dice.toml to read (checked before any input)"),
               llvm::cl::value_desc("file"), llvm::cl::init(""));

static llvm::cl::opt<std::string> databaseFile(
    "dice-db",
    llvm::cl::desc("kernel database of the dice passes (default: dice.toml's "
                   "database)"),
    llvm::cl::value_desc("path"), llvm::cl::init(""));

static llvm::cl::opt<std::string> reportFile(
    "dice-report",
    llvm::cl::desc("write dice-resolve's per-request report ('-': stdout)"),
    llvm::cl::value_desc("file|-"), llvm::cl::init(""));

static llvm::cl::opt<bool> progress(
    "dice-progress",
    llvm::cl::desc("print the dice passes' progress to stderr (model calls, "
                   "kernel builds, GPU checks); on by default when stderr is "
                   "a terminal"),
    llvm::cl::init(llvm::sys::Process::StandardErrIsDisplayed()));

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::dice::registerDiceDialects(registry);
  mlir::registerAllPasses();
  mlir::dice::registerDicePasses();
  mlir::dice::registerDicePipeline();

  auto [inputFile, outputFile] = mlir::registerAndParseCLIOptions(
      argc, argv, "DICE compiler driver\n", registry);

  mlir::dice::DriverDefaults defaults;
  if (!configFile.empty()) {
    dice::ConfigResult config = dice::loadConfigFile(configFile);
    if (!config) {
      llvm::errs() << config.error().format() << "\n";
      return 1;
    }
    defaults.config = *config;
  }
  defaults.databasePath = databaseFile;
  defaults.reportPath = reportFile;
  defaults.progress = progress;
  mlir::dice::setDriverDefaults(std::move(defaults));

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, inputFile, outputFile, registry));
}
