//===- Transformer.h - the SDAR/Qwen3 block-diffusion transformer -*- C++ -*-===//
//
// Qwen3 decoder layers with block-causal attention over a preallocated KV
// cache, in LibTorch. Only LibTorch-built code includes this header; the
// compiler core reaches the model through dice::InfillEngine.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_MODEL_TRANSFORMER_H
#define DICE_MODEL_TRANSFORMER_H

#include "dice/Model/ErrorOr.h"
#include "dice/Model/ModelConfig.h"

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

namespace dice {

/// The weights of one decoder layer, laid out as in the checkpoint
/// (`nn.Linear` weights are [out, in]).
struct LayerWeights {
  torch::Tensor inputNorm;     // [H]
  torch::Tensor wq, wk, wv;    // [Hq*D, H], [Hkv*D, H], [Hkv*D, H]
  torch::Tensor qNorm, kNorm;  // [D], [D]
  torch::Tensor wo;            // [H, Hq*D]
  torch::Tensor postNorm;      // [H]
  torch::Tensor wGate, wUp;    // [I, H]
  torch::Tensor wDown;         // [H, I]
};

struct TransformerWeights {
  torch::Tensor embedding; // [V, H]
  std::vector<LayerWeights> layers;
  torch::Tensor finalNorm; // [H]
  torch::Tensor lmHead;    // [V, H]; the embedding when tied
};

/// Reads a checkpoint directory's safetensors into weights of `dtype` on
/// `device`; every tensor is checked against `config` (checkpoint names are
/// known in one place: model/Checkpoint.cpp). Never throws.
ErrorOr<TransformerWeights> loadTransformerWeights(const std::string &dir,
                                                   const ModelConfig &config,
                                                   torch::Device device,
                                                   torch::ScalarType dtype);

/// Every tensor a checkpoint of `config` holds, with its shape, in the
/// order the loader reads them.
std::vector<std::pair<std::string, std::vector<int64_t>>>
checkpointTensorShapes(const ModelConfig &config);

torch::ScalarType toScalarType(ModelDType dtype);

/// Keys and values of every layer for `batch` sequences of at most
/// `capacity` positions, allocated once. Positions [0, length) hold stored
/// KV; a block step writes its KV just past `length` as scratch and leaves
/// `length` alone, so the next step or the store overwrites it.
struct KVCache {
  torch::Tensor keys;   // [L, N, Hkv, Tmax, D]
  torch::Tensor values; // [L, N, Hkv, Tmax, D]
  torch::Tensor cos;    // [Tmax, D] rotary table, model dtype
  torch::Tensor sin;    // [Tmax, D]
  int64_t length = 0;

  int64_t batch() const { return keys.size(1); }
  int64_t capacity() const { return keys.size(3); }
  /// A cache sharing this one's storage for sequences [first, first+count).
  KVCache rows(int64_t first, int64_t count) const;
  /// Copies sequence `row`'s stored KV into every other sequence.
  void broadcastRow(int64_t row);
};

class Transformer {
public:
  Transformer(ModelConfig config, TransformerWeights weights);

  /// Loads `dir` (config.json, safetensors) onto `device` in `dtype`. Never
  /// throws: every failure, LibTorch's included, is returned.
  static ErrorOr<std::unique_ptr<Transformer>>
  load(const std::string &dir, torch::Device device, torch::ScalarType dtype);

  const ModelConfig &config() const { return cfg; }
  torch::Device device() const { return w.embedding.device(); }
  torch::ScalarType dtype() const { return w.embedding.scalar_type(); }

  KVCache allocateCache(int64_t batch, int64_t capacity) const;

  /// Runs `ids` ([N, T]) at positions [cache.length, cache.length + T).
  /// Attention is block-causal over absolute positions with blocks of
  /// `blockSize`: a query sees every key whose block is not after its own,
  /// so a block-aligned query block sees the whole cache and itself
  /// bidirectionally. `storeKv` advances cache.length by T. Returns logits
  /// [N, T, V] (logit i predicts token i itself), or an undefined tensor
  /// when `wantLogits` is false. Throws c10::Error when the cache is too
  /// small or of another batch (LibTorch-side API; the sampler catches).
  torch::Tensor forward(const torch::Tensor &ids, KVCache &cache,
                        int64_t blockSize, bool storeKv, bool wantLogits);

  /// Block-causal prefill of a prompt; stores its KV.
  torch::Tensor prefill(const torch::Tensor &ids, KVCache &cache,
                        int64_t blockSize, bool wantLogits = false) {
    return forward(ids, cache, blockSize, /*storeKv=*/true, wantLogits);
  }
  /// One denoising step of block `ids` ([N, B]) against the cache; the
  /// block's KV is not kept.
  torch::Tensor blockStep(const torch::Tensor &ids, KVCache &cache) {
    return forward(ids, cache, ids.size(1), /*storeKv=*/false, true);
  }
  /// The same forward for a finished block, keeping its KV.
  torch::Tensor storeBlock(const torch::Tensor &ids, KVCache &cache,
                           bool wantLogits = false) {
    return forward(ids, cache, ids.size(1), /*storeKv=*/true, wantLogits);
  }

private:
  ModelConfig cfg;
  TransformerWeights w;
};

} // namespace dice

#endif // DICE_MODEL_TRANSFORMER_H
