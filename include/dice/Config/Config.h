//===- Config.h - dice.toml configuration -----------------------*- C++ -*-===//
//
// Every tunable of the compiler, the model runtime and the verifier, with its
// default. Parsed from `dice.toml`; unknown keys, wrong types and values out
// of range are errors naming the file, line and key. Used by LLVM-built and
// LibTorch-built code alike, so it depends on neither and throws nothing.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_CONFIG_CONFIG_H
#define DICE_CONFIG_CONFIG_H

#include "dice/Support/Result.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dice {

/// How the block-diffusion sampler picks the positions to unmask per step.
enum class Remasking { Static, Dynamic, Sequential };

/// What a candidate's time is compared against: the eager ATen reference
/// program, timed by the verifier; eager PyTorch as the caller timed it
/// (dice-curate times each pair's own program); or the partition as Inductor
/// compiles it, timed by the torch.compile backend. The last two come
/// through `baselineTimes`. ("default-lowering" is refused until it is
/// measured.)
enum class Baseline { Eager, MeasuredEager, Inductor, Fastest };

/// How the verifier compares results with the reference (docs/verifier.md):
/// scaled to the reference (what `accepted` means), or KernelBench's plain
/// allclose, for reporting its metrics.
enum class Comparison { Scaled, KernelBench };

struct SamplingConfig {
  int64_t blockLength = 4;
  int64_t denoisingSteps = 4;
  Remasking remasking = Remasking::Static;
  double threshold = 0.9;   ///< confidence needed to unmask (dynamic)
  double temperature = 1.0; ///< 0 means greedy
  int64_t topK = 1;         ///< 0 disables top-k
  double topP = 1.0;
  int64_t maxTokens = 4096;
  int64_t candidates = 8; ///< candidates decoded together per request
  /// The decoding keys dice.toml or an override set. The model engine takes
  /// the others from the checkpoint's generation_config.json, as
  /// transformers does (applyGenerationDefaults in ModelConfig.h).
  struct {
    bool temperature = false, topK = false, topP = false, maxTokens = false;
  } userSet;

  /// Greedy choice of each token (temperature 0 or top-k 1): every
  /// candidate of a request would be the same text.
  bool deterministic() const { return temperature == 0 || topK == 1; }
};

struct VerifierConfig {
  int64_t trials = 5;
  double atol = 1e-4;     ///< fp32 tolerances
  double rtol = 1e-4;
  double halfAtol = 1e-2; ///< fp16/bf16 tolerances
  double halfRtol = 1e-2;
  Comparison comparison = Comparison::Scaled;
  double kernelbenchTolerance = 1e-2; ///< atol = rtol under KernelBench
  int64_t timingRuns = 100;
  /// Timing stops once the median's 95% interval is within +/- this
  /// fraction of it (TimingRule.h); 0: always all of timingRuns.
  double timingPrecision = 0.01;
  double minSpeedup = 1.0;
  Baseline baseline = Baseline::Eager;
  /// With the measured baselines: the JSON file of each request's measured
  /// times (BaselineTimes.h).
  std::string baselineTimes;
  double timeoutSeconds = 60;
  /// 0: one per CPU core on a CPU, up to kGpuWorkers on a GPU (at most one
  /// per candidate either way; CandidateVerifier.h, verifierWorkerCount).
  int64_t workers = 0;
  /// Up to this many light candidates of different requests share one
  /// nvcc run, a library used for checking only (KernelBuild.h,
  /// KernelBuildOptions::groupSize); 1: one build per candidate.
  int64_t buildGroup = 8;
};

struct Config {
  std::string modelPath; ///< empty: the default model
  /// An adapter (PEFT's folder format) and the checkpoint it was trained
  /// on, merged at load; set together, instead of modelPath.
  std::string modelBase;
  std::string modelAdapter;
  /// Where the model runs: "auto" (the GPU when there is one), "cuda", "cpu".
  std::string modelDevice = "auto";
  /// What the model computes in: "auto" (the checkpoint's torch_dtype on a
  /// GPU, float32 on the CPU), "bfloat16", "float16", "float32".
  std::string modelDType = "auto";
  SamplingConfig sampling;
  VerifierConfig verifier;
  /// Prompt template files (PromptTemplate.h); empty: the built-in wording.
  std::string promptInfill;
  std::string promptEndToEnd;
  std::string databasePath = ".dice/kernels.db";
  std::string artifactDir = ".dice/artifacts";
};

/// Parses TOML text; `sourceName` names it in errors, which carry the line,
/// column and dotted key (e.g. "sampling.top_k") at fault.
Result<Config> parseConfig(std::string_view text, std::string_view sourceName);

/// Reads and parses a file.
Result<Config> loadConfigFile(const std::string &path);

/// Every section of dice.toml with its keys, in the schema's order (what
/// `dice-opt --dice-config-keys` prints for programs that check keys early).
std::vector<std::pair<std::string, std::vector<std::string>>> configKeys();

/// Sets one dotted key (e.g. "sampling.top_k") from its TOML spelling
/// ("5", "\"dynamic\"", "0.5"), with the same checks as a file; how pass
/// options override the file.
Status applyConfigOverride(Config &config, std::string_view key,
                           std::string_view value);

std::string_view toString(Remasking remasking);
std::string_view toString(Baseline baseline);
std::string_view toString(Comparison comparison);

} // namespace dice

#endif // DICE_CONFIG_CONFIG_H
