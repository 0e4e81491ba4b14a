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

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllExtensions.h"
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
  registry.insert<mlir::dice::DiceDialect>();
  // What torch-mlir's linalg-on-tensors backend contract produces.
  registry.insert<mlir::func::FuncDialect, mlir::arith::ArithDialect,
                  mlir::math::MathDialect, mlir::linalg::LinalgDialect,
                  mlir::tensor::TensorDialect, mlir::complex::ComplexDialect,
                  mlir::ml_program::MLProgramDialect, mlir::scf::SCFDialect,
                  mlir::cf::ControlFlowDialect>();
  // What bufferization and the GPU lowering go through.
  registry.insert<mlir::memref::MemRefDialect,
                  mlir::bufferization::BufferizationDialect,
                  mlir::affine::AffineDialect, mlir::vector::VectorDialect,
                  mlir::index::IndexDialect, mlir::gpu::GPUDialect,
                  mlir::nvgpu::NVGPUDialect, mlir::NVVM::NVVMDialect,
                  mlir::LLVM::LLVMDialect>();
  mlir::registerAllExtensions(registry);
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
