//===- Adapter.h - LoRA adapters in PEFT's folder format --------*- C++ -*-===//
//
// An adapter is what a LoRA run trains over a frozen base: low-rank updates
// of the decoder's projections and, where the base had no trained row for a
// token it needs (the mask token), replaced rows of the embedding and of an
// untied head. It is stored as PEFT stores one (adapter_config.json and
// adapter_model.safetensors, `trainable_token_indices` for the rows), so
// `peft.PeftModel.from_pretrained` reads what dice-train writes and the
// runtime reads what PEFT writes. The runtime merges an adapter into the
// base's weights at load: decoding costs what the base costs.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_MODEL_ADAPTER_H
#define DICE_MODEL_ADAPTER_H

#include "dice/Model/ModelConfig.h"
#include "dice/Support/Result.h"

#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

namespace dice {

struct TransformerWeights;

/// The projections an adapter may target, in the order layers hold them.
inline constexpr const char *kAdapterTargets[] = {
    "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};

inline constexpr const char *kAdapterConfigFile = "adapter_config.json";
inline constexpr const char *kAdapterWeightsFile = "adapter_model.safetensors";

/// Rows of a [V, H] table that the adapter replaces (PEFT's
/// trainable_token_indices: whole rows, not deltas).
struct TokenRows {
  std::vector<int64_t> ids;
  torch::Tensor values; ///< [ids.size(), H]
};

struct AdapterSettings {
  int64_t rank = 0;
  double alpha = 16;
  bool rslora = false; ///< scale alpha / sqrt(rank) instead of alpha / rank
  std::vector<std::string> targets;
  std::vector<int64_t> embeddingRows; ///< token ids (a tied head follows)
  std::vector<int64_t> headRows;      ///< token ids of an untied head
  double scale() const;
};

struct Adapter {
  AdapterSettings settings;
  /// By the base's weight name ("model.layers.0.self_attn.q_proj.weight"):
  /// A [rank, in] and B [out, rank]; the update is scale * B A.
  std::map<std::string, std::pair<torch::Tensor, torch::Tensor>> lora;
  TokenRows embedding; ///< rows of the embedding (and of a tied head)
  TokenRows head;      ///< rows of an untied head
};

/// PEFT's tensor names: the LoRA factor `which` ('A' or 'B') of a base
/// weight, and the replaced rows of the embedding or of the head.
std::string adapterFactorName(const std::string &weightName, char which);
std::string adapterRowsName(bool head);

/// Reads `dir` (adapter_config.json, adapter_model.safetensors) for a base
/// of `config`: every setting that changes the adapted model and is not
/// computed here, every tensor of another name or shape, and rows outside
/// the vocabulary are errors naming the file and key.
Result<Adapter> readAdapter(const std::string &dir, const ModelConfig &config);

/// Merges the adapter into `weights` (as loaded, or fused: the names are
/// views then): W + scale * B A in float32 and the rows copied in, as new
/// tensors, so what `weights` shared with another owner is left alone.
void applyAdapter(const Adapter &adapter, const ModelConfig &config,
                  TransformerWeights &weights);

/// Writes `dir`/adapter_config.json for `settings` over the base at
/// `baseDir`; `tensors` (named by adapterFactorName / adapterRowsName) go to
/// adapter_model.safetensors beside it, in float32.
Status writeAdapter(const std::string &dir, const AdapterSettings &settings,
                    const std::string &baseDir,
                    const std::vector<std::pair<std::string, torch::Tensor>> &tensors);

} // namespace dice

#endif // DICE_MODEL_ADAPTER_H
