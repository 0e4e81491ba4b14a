//===- PolicyModel.h - the decoder, trainable -------------------*- C++ -*-===//
//
// The model runtime's decoder layers (dice/Model/DecoderLayer.h, the same
// code) with what training adds: autograd, fp32 master weights (the fused
// matrices, named as fusedParameters names them), any attention mask (the
// BD3-LM and TraceRL layouts of TokenLayout.h), optional LoRA adapters (with
// the mask token's rows trained beside them: Adapter.h) and per-layer
// gradient checkpointing. Sampling runs on the runtime's
// transformer, built from these weights by `inferenceWeights`, so a rollout
// is decoded exactly as the compiler decodes.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_TRAIN_POLICYMODEL_H
#define DICE_TRAIN_POLICYMODEL_H

#include "dice/Model/Adapter.h"
#include "dice/Model/ModelConfig.h"
#include "dice/Model/Transformer.h"
#include "dice/Support/Result.h"

#include <torch/torch.h>

#include <array>
#include <map>
#include <string>
#include <vector>

namespace dice {

struct LoraOptions {
  int64_t rank = 0; ///< 0: no adapters, every weight trains
  double alpha = 16;
  /// Projections that get adapters: q_proj, k_proj, v_proj, o_proj,
  /// gate_proj, up_proj, down_proj.
  std::vector<std::string> targets;
  /// The mask token's row of the embedding (and of an untied head) trains
  /// too, starting from the base's row.
  bool trainMaskRow = false;
};

class PolicyModel {
public:
  /// Weights from a checkpoint folder (fp32 masters for full fine-tuning;
  /// the base in `baseDtype` and fp32 adapters with LoRA).
  static Result<PolicyModel> load(const std::string &dir, torch::Device device,
                                  const LoraOptions &lora);
  /// Weights drawn at random for `config` (normal, std 0.02; norms 1), from
  /// `seed`: the same on every rank.
  static PolicyModel random(const ModelConfig &config, torch::Device device,
                            const LoraOptions &lora, uint64_t seed);

  const ModelConfig &config() const { return cfg; }
  torch::Device device() const;

  /// Final hidden states [N, T, H] of `ids` ([N, T]) at `positions`
  /// ([N, T], RoPE positions) where query i may attend to key j iff
  /// `allowed[n][i][j]` ([N, T, T] bool).
  torch::Tensor hidden(const torch::Tensor &ids, const torch::Tensor &positions,
                       const torch::Tensor &allowed);
  /// Logits [..., V] of hidden states [..., H] (float32).
  torch::Tensor logits(const torch::Tensor &hidden);

  /// What the optimizer updates, by name: the fused parameters
  /// (fusedParameters) in full fine-tuning; with LoRA the adapters and
  /// trained rows, under PEFT's names (adapterFactorName, adapterRowsName).
  std::vector<std::pair<std::string, torch::Tensor>> trainable();
  /// Every tensor of the checkpoint, adapters merged, in `dtype` (detached).
  std::vector<std::pair<std::string, torch::Tensor>>
  checkpointTensors(torch::ScalarType dtype) const;
  /// Adapters and trained rows alone: the adapter folder's tensors, read
  /// back by restore for an exact resume.
  std::vector<std::pair<std::string, torch::Tensor>> adapterTensors() const;
  /// The adapter folder's settings (rank, alpha, targets, trained rows).
  AdapterSettings adapterSettings() const;
  /// Puts saved values back by name: weights (full fine-tuning) or adapters.
  Status restore(const std::map<std::string, torch::Tensor> &saved);

  /// The runtime transformer's weights: merged, detached, in `dtype`.
  TransformerWeights inferenceWeights(torch::ScalarType dtype) const;

  void setGradientCheckpointing(bool on) { checkpointing = on; }
  bool usesLora() const { return lora.rank > 0; }

private:
  struct LayerCheckpoint;
  /// q, k, v, o, gate, up, down: the projections LoRA adapts, in order.
  using Adapters = std::array<LoraAdapter, 7>;
  PolicyModel() = default;
  void initAdapters(uint64_t seed);
  torch::Tensor layer(int64_t index, const torch::Tensor &x, const torch::Tensor &cos,
                      const torch::Tensor &sin, const torch::Tensor &mask) const;
  /// Layer `index`'s tensors that take gradients (weights or adapters).
  std::vector<torch::Tensor> layerParameters(int64_t index);
  /// Every checkpoint tensor by name, adapters merged by the runtime's
  /// applyAdapter (detached).
  std::map<std::string, torch::Tensor> mergedWeights() const;
  /// The adapters and trained rows as the runtime merges them (detached).
  Adapter currentAdapter() const;
  /// The head with its trained mask row copied in (the head itself where
  /// no row trains): a copy of the table, for the head's product.
  torch::Tensor headTable() const;

  ModelConfig cfg;
  LoraOptions lora;
  bool checkpointing = false;
  TransformerWeights w;           ///< fused (fuseLayer); lmHead is the embedding when tied
  std::vector<Adapters> adapters; ///< per layer; undefined where not adapted
  /// [1, H] fp32: the mask token's trained rows (LoRA with trainMaskRow);
  /// maskHead only for an untied head.
  torch::Tensor maskEmbedding, maskHead;
};

} // namespace dice

#endif // DICE_TRAIN_POLICYMODEL_H
