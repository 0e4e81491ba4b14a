//===- ModelConfig.h - decoder checkpoint configuration ---------*- C++ -*-===//
//
// The hyperparameters of a checkpoint, read from its `config.json` (and the
// stop ids and recommended decoding from `generation_config.json` when
// present): SDAR/Qwen3, Qwen2 and Llama decoders, which differ only in the
// features below. Plain C++: no LibTorch, no LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_MODEL_MODELCONFIG_H
#define DICE_MODEL_MODELCONFIG_H

#include "dice/Config/Config.h"
#include "dice/Support/Result.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dice {

/// Element type of weights and activations.
enum class ModelDType { Float32, Float16, BFloat16 };

/// The decoding a checkpoint recommends: generation_config.json's
/// `do_sample`, `temperature`, `top_k`, `top_p` and `max_new_tokens`, each
/// absent unless the file gives it.
struct GenerationDefaults {
  std::optional<bool> doSample;
  std::optional<double> temperature;
  std::optional<int64_t> topK;
  std::optional<double> topP;
  std::optional<int64_t> maxNewTokens;
};

struct ModelConfig {
  /// config.json's `model_type`: "sdar" or "qwen3" (per-head q/k RMSNorm),
  /// "qwen2" (biased q/k/v projections), "llama".
  std::string modelType = "sdar";
  bool qkNorm = true;     ///< RMSNorm over each head of q and k (Qwen3)
  bool qkvBias = false;   ///< q_proj, k_proj, v_proj have biases
  bool outputBias = false; ///< o_proj has a bias (`attention_bias` of Qwen3, Llama)
  int64_t hiddenSize = 0;
  int64_t intermediateSize = 0;
  int64_t numHiddenLayers = 0;
  int64_t numAttentionHeads = 0;
  int64_t numKeyValueHeads = 0;
  int64_t headDim = 0; ///< hidden_size / heads when config.json omits it
  double ropeTheta = 1e6;
  double rmsNormEps = 1e-6;
  int64_t vocabSize = 0;
  int64_t blockSize = 4;           ///< block of the block-causal attention
  int64_t maskTokenId = 151669;    ///< `<|MASK|>`
  bool tieWordEmbeddings = false;  ///< lm_head reuses embed_tokens
  ModelDType torchDtype = ModelDType::BFloat16; ///< dtype of the weights
  /// Generation stops after a block holding one of these (generation_config
  /// `eos_token_id`, else config.json's, else `<|im_end|>`/`<|endoftext|>`).
  std::vector<int64_t> stopTokenIds;
  GenerationDefaults generation;
};

/// `sampling` with the checkpoint's recommended decoding for the keys the
/// user did not set (`sampling.userSet`), as transformers' generate() reads
/// generation_config.json: with `do_sample` true, temperature, top-k and
/// top-p come from the file or transformers' defaults (1.0, 50, 1.0);
/// with it false or absent the user's settings and dice's defaults (greedy)
/// stand. The file's `max_new_tokens` bounds each candidate either way.
SamplingConfig applyGenerationDefaults(SamplingConfig sampling,
                                       const GenerationDefaults &generation);

/// Parses config.json text; `sourceName` names it in errors. Stop ids come
/// from the config's `eos_token_id` when present. A feature the decoder does
/// not compute (another activation, rope scaling, sliding windows, MLP
/// biases) is an error naming its key, never ignored.
Result<ModelConfig> parseModelConfig(std::string_view json,
                                     std::string_view sourceName);

/// Reads `dir/config.json` and, when present, `dir/generation_config.json`.
Result<ModelConfig> loadModelConfig(const std::string &dir);

/// "float32", "float16", "bfloat16" (also "fp32", "fp16", "bf16").
Result<ModelDType> parseModelDType(std::string_view name);
std::string_view toString(ModelDType dtype);

/// What the model computes in: `requested` when it names a dtype; for
/// "auto" (or empty) the checkpoint's `stored` type on a GPU and float32 on
/// the CPU, where bfloat16 and float16 arithmetic is emulated (slower, and
/// rounded more, than float32).
Result<ModelDType> computeDType(std::string_view requested, bool onCpu,
                                ModelDType stored);

} // namespace dice

#endif // DICE_MODEL_MODELCONFIG_H
