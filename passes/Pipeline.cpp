//===- Pipeline.cpp - dice-pipeline: request to kernel or fallback --------===//

#include "Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::dice;

namespace {

/// The options of the pipeline's passes, under the names the passes use.
struct DicePipelineOptions : public PassPipelineOptions<DicePipelineOptions> {
  Option<std::string> granularity{
      *this, "granularity",
      llvm::cl::desc("op, fusion or function (KernelBench levels 1, 2, 3)"),
      llvm::cl::init("fusion")};
  Option<std::string> engine{
      *this, "engine",
      llvm::cl::desc("replay:<file.jsonl>, model or model:<dir>"),
      llvm::cl::init("model")};
  Option<int64_t> candidates{
      *this, "candidates",
      llvm::cl::desc("candidates per request (0: dice.toml's)"),
      llvm::cl::init(0)};
  Option<std::string> gpuArch{*this, "gpu-arch",
                              llvm::cl::desc("GPU architecture of the kernels"),
                              llvm::cl::init("sm_90")};
  Option<std::string> database{
      *this, "db", llvm::cl::desc("kernel database (default: --dice-db)"),
      llvm::cl::init("")};
  Option<std::string> nvcc{*this, "nvcc",
                           llvm::cl::desc("nvcc to build candidates with"),
                           llvm::cl::init("")};
  Option<bool> staticAnalysis{
      *this, "static-analysis",
      llvm::cl::desc("run the static deception analysis"),
      llvm::cl::init(true)};
  Option<unsigned> jobs{*this, "jobs",
                        llvm::cl::desc("kernel library builds at once"),
                        llvm::cl::init(0)};
  Option<double> minSpeedup{
      *this, "min-speedup",
      llvm::cl::desc("least speedup to use a kernel (negative: dice.toml's)"),
      llvm::cl::init(-1)};
  Option<std::string> artifacts{
      *this, "artifacts",
      llvm::cl::desc("where accepted kernels and manifest.json go "
                     "(default: dice.toml's artifacts.dir)"),
      llvm::cl::init("")};
  Option<std::string> report{
      *this, "report",
      llvm::cl::desc("report file, '-' for stdout (default: --dice-report)"),
      llvm::cl::init("")};
};

void buildDicePipeline(OpPassManager &pm, const DicePipelineOptions &options) {
  pm.addPass(createDiceOutline(DiceOutlineOptions{options.granularity}));
  pm.addPass(createDiceScaffold());
  pm.addPass(createDiceInfill(DiceInfillOptions{
      options.engine, options.candidates, options.gpuArch, options.database}));
  pm.addPass(createDiceVerify(DiceVerifyOptions{
      options.database, options.nvcc, options.staticAnalysis, options.jobs}));
  pm.addPass(createDiceResolve(DiceResolveOptions{
      options.minSpeedup, options.database, options.report}));
  pm.addPass(createDiceLower(DiceLowerOptions{options.artifacts}));
}

} // namespace

void mlir::dice::registerDicePipeline() {
  PassPipelineRegistration<DicePipelineOptions>(
      "dice-pipeline",
      "Outline, scaffold, infill, verify, resolve and lower: each kernel "
      "request becomes a call of a verified kernel or its original ops",
      buildDicePipeline);
}
