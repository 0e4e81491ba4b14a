//===- Transformer.h - the block-diffusion transformer ---------*- C++ -*-===//
//
// Decoder layers (DecoderLayer.h: SDAR/Qwen3, Qwen2, Llama) with
// block-causal attention over a preallocated KV cache, in LibTorch. Only LibTorch-built code includes this header; the
// compiler core reaches the model through dice::InfillEngine.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_MODEL_TRANSFORMER_H
#define DICE_MODEL_TRANSFORMER_H

#include "dice/Model/DecoderLayer.h"
#include "dice/Model/ModelConfig.h"
#include "dice/Support/Result.h"

#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dice {

struct TransformerWeights {
  torch::Tensor embedding; // [V, H]
  std::vector<LayerWeights> layers;
  torch::Tensor finalNorm; // [H]
  torch::Tensor lmHead;    // [V, H]; the embedding when tied
};

/// Reads a checkpoint directory's safetensors into weights of `dtype` on
/// `device`; every tensor is checked against `config` (checkpoint names are
/// known in one place: lib/Model/Checkpoint.cpp). Never throws.
Result<TransformerWeights> loadTransformerWeights(const std::string &dir,
                                                  const ModelConfig &config,
                                                  torch::Device device,
                                                  torch::ScalarType dtype);

/// Every tensor a checkpoint of `config` holds, with its shape, in the
/// order the loader reads them.
std::vector<std::pair<std::string, std::vector<int64_t>>>
checkpointTensorShapes(const ModelConfig &config);

/// Every checkpoint tensor of `weights` by name, in checkpointTensorShapes'
/// order (the trainer fills and reads weights by these names). The tied
/// head is not listed: it is the embedding.
std::vector<std::pair<std::string, torch::Tensor *>>
namedWeights(const ModelConfig &config, TransformerWeights &weights);

/// The tensors that own the memory of fused weights (every layer through
/// fuseLayer), by name: the checkpoint's name where a tensor is its own,
/// and `<layer>.self_attn.qkv_proj.weight` / `.bias` and
/// `<layer>.mlp.gate_up_proj.weight` for the fused matrices. The trainer's
/// parameters, and the names its optimizer state is kept under.
std::vector<std::pair<std::string, torch::Tensor *>>
fusedParameters(const ModelConfig &config, TransformerWeights &weights);

torch::ScalarType toScalarType(ModelDType dtype);

/// Every tensor of one safetensors file, copied to host memory.
Result<std::map<std::string, torch::Tensor>>
readTensorFile(const std::string &path);

/// Keys and values of every layer for `batch` sequences of at most
/// `capacity` positions, allocated once. Positions [0, length) hold stored
/// KV; a block step writes its KV just past `length` as scratch and leaves
/// `length` alone, so the next step or the store overwrites it.
struct KVCache {
  torch::Tensor keys;   // [L, N, Hkv, Tmax, D]
  torch::Tensor values; // [L, N, Hkv, Tmax, D]
  int64_t length = 0;

  int64_t batch() const { return keys.size(1); }
  int64_t capacity() const { return keys.size(3); }
  /// A cache sharing this one's storage for sequences [first, first+count).
  KVCache rows(int64_t first, int64_t count) const;
  /// Copies sequence `row`'s stored KV into every other sequence.
  void broadcastRow(int64_t row);
};

class StepGraphCache;

class Transformer {
public:
  /// Takes the weights as loaded and fuses the q/k/v and gate/up
  /// projections (one matrix product each instead of three and two) where
  /// they are not yet fused.
  Transformer(ModelConfig config, TransformerWeights weights);
  ~Transformer();

  /// Loads `dir` (config.json, safetensors) onto `device` in `dtype`, with
  /// the adapter folder `adapter` (Adapter.h) merged in where one is named.
  /// Never throws: every failure, LibTorch's included, is returned.
  static Result<std::unique_ptr<Transformer>>
  load(const std::string &dir, torch::Device device, torch::ScalarType dtype,
       const std::string &adapter = "");

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

  /// The block-step family on fixed shapes, as the sampler drives it: the
  /// same results as blockStep / storeBlock, but every shape depends only on
  /// (N, B) and a bucket of key positions, so on CUDA each call replays a
  /// captured graph (see setUseCudaGraphs).
  ///
  /// One denoising step of `ids` ([N, B]) at cache.length; stores nothing.
  /// Returns logits [N, B, V].
  torch::Tensor denoiseBlock(const torch::Tensor &ids, KVCache &cache);
  /// Stores the finished block `ids` ([N, B]); no logits.
  void commitBlock(const torch::Tensor &ids, KVCache &cache);
  /// Stores `done` ([N, B]) and runs a denoising step of `next` ([N, B]) at
  /// the B positions after it, in one forward, so the weights are read once
  /// for both. Returns the logits of `next` ([N, B, V]); cache.length grows
  /// by B. The same result as commitBlock(done) then denoiseBlock(next).
  torch::Tensor commitAndDenoise(const torch::Tensor &done,
                                 const torch::Tensor &next, KVCache &cache);

  /// Whether block steps on a CUDA device replay captured CUDA graphs (on by
  /// default). A graph is captured per (batch, block shape, bucket of key
  /// positions, cache) the first time it is needed; the logits a replay
  /// returns live in the graph's output buffer and are overwritten by the
  /// next replay of that graph.
  void setUseCudaGraphs(bool use) { useGraphs = use; }
  bool usesCudaGraphs() const;
  /// Drops every captured graph and its buffers.
  void clearCudaGraphs();

private:
  /// The fixed-shape forward of the block-step family: `ids` ([N, T]) at
  /// the positions held in the device tensor `start` ([1] int64) onward,
  /// attending to the first `keys` cache positions through a block-causal
  /// mask that also hides positions past start + T. Writes the KV of all T
  /// positions; logits for the last `logitPositions` positions (none: an
  /// undefined tensor). Shapes depend only on (N, T, keys), so the same
  /// call can be captured once and replayed at any start.
  torch::Tensor stepForward(const torch::Tensor &ids, const torch::Tensor &start,
                            KVCache &cache, int64_t blockSize, int64_t keys,
                            int64_t logitPositions);
  /// stepForward of `blocks` side by side ([N, T] together) at
  /// cache.length, through a CUDA graph where possible.
  torch::Tensor runStep(const std::vector<torch::Tensor> &blocks,
                        KVCache &cache, int64_t blockSize,
                        int64_t logitPositions);

  ModelConfig cfg;
  TransformerWeights w;
  bool useGraphs = true;
  std::unique_ptr<StepGraphCache> graphs;
};

} // namespace dice

#endif // DICE_MODEL_TRANSFORMER_H
