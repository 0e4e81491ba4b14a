//===- Registration.cpp - the dialects DICE tools read --------------------===//

#include "dice/Transforms/Passes.h"

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
#include "mlir/InitAllExtensions.h"

void mlir::dice::registerDiceDialects(DialectRegistry &registry) {
  registry.insert<DiceDialect>();
  // What torch-mlir's linalg-on-tensors backend contract produces.
  registry.insert<func::FuncDialect, arith::ArithDialect, math::MathDialect,
                  linalg::LinalgDialect, tensor::TensorDialect,
                  complex::ComplexDialect, ml_program::MLProgramDialect,
                  scf::SCFDialect, cf::ControlFlowDialect>();
  // What bufferization and the GPU lowering go through.
  registry.insert<memref::MemRefDialect, bufferization::BufferizationDialect,
                  affine::AffineDialect, vector::VectorDialect,
                  index::IndexDialect, gpu::GPUDialect, nvgpu::NVGPUDialect,
                  NVVM::NVVMDialect, LLVM::LLVMDialect>();
  registerAllExtensions(registry);
}
