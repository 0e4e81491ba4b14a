//===- dice-opt.cpp - the DICE compiler driver ----------------------------===//
//
// mlir-opt with the dice dialect and passes, plus the upstream dialects that
// torch-mlir's linalg-on-tensors output and the GPU lowering use. Options
// beyond mlir-opt's: --dice-config=<dice.toml>, checked before any input is
// read so that a bad configuration fails fast with file and line.
//
//===----------------------------------------------------------------------===//

#include "Dice/DiceDialect.h"
#include "Passes.h"
#include "dice/Config/Config.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

static llvm::cl::opt<std::string>
    configFile("dice-config",
               llvm::cl::desc("dice.toml to read (checked before any input)"),
               llvm::cl::value_desc("file"), llvm::cl::init(""));

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::dice::registerDiceDialects(registry);
  mlir::registerAllPasses();
  mlir::dice::registerDicePasses();

  auto [inputFile, outputFile] = mlir::registerAndParseCLIOptions(
      argc, argv, "DICE compiler driver\n", registry);

  if (!configFile.empty()) {
    dice::ConfigResult config = dice::loadConfigFile(configFile);
    if (!config) {
      llvm::errs() << config.error().format() << "\n";
      return 1;
    }
  }

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, inputFile, outputFile, registry));
}
