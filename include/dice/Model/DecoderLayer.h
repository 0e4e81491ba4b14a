//===- DecoderLayer.h - the one decoder layer -------------------*- C++ -*-===//
//
// The decoder's math, written once. The runtime's reference forward, the
// sampler's block step (captured as CUDA graphs), the trainer's policy with
// autograd and its rollouts all run `decoderLayer`; they differ only in how
// attention reads and writes keys and values (the `Attend` each passes), so
// a numerical change reaches every one of them at once.
//
//   h = rmsnorm(x)
//   q, k, v = h Wqkv + bqkv        one fused product; bias in Qwen2
//   q, k = rope(qknorm(q, k))      per-head RMSNorm in Qwen3/SDAR only
//   x = x + attend(q, k, v) Wo + bo
//   h = rmsnorm(x)
//   x = x + (silu(h Wgate) * h Wup) Wdown     gate and up: one product
//
// Only LibTorch-built code includes this header.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_MODEL_DECODERLAYER_H
#define DICE_MODEL_DECODERLAYER_H

#include "dice/Model/ModelConfig.h"

#include <torch/torch.h>

#include <functional>

namespace dice {

/// The weights of one decoder layer. `wqkv` (and `bqkv`) and `wGateUp` are
/// the fused matrices the layer multiplies by (built at load, as gpt-fast
/// does); `wq`, `wk`, `wv`, `bq`, `bk`, `bv`, `wGate`, `wUp` are row views
/// of them under the checkpoint's names. `nn.Linear` weights are [out, in].
/// Biases and q/k norms are undefined where the family has none.
struct LayerWeights {
  torch::Tensor inputNorm;     // [H]
  torch::Tensor wq, wk, wv;    // [Hq*D, H], [Hkv*D, H], [Hkv*D, H]
  torch::Tensor bq, bk, bv;    // [Hq*D], [Hkv*D], [Hkv*D]
  torch::Tensor qNorm, kNorm;  // [D], [D]
  torch::Tensor wo;            // [H, Hq*D]
  torch::Tensor bo;            // [H]
  torch::Tensor postNorm;      // [H]
  torch::Tensor wGate, wUp;    // [I, H]
  torch::Tensor wDown;         // [H, I]
  torch::Tensor wqkv;          // [(Hq+2*Hkv)*D, H]: wq; wk; wv
  torch::Tensor bqkv;          // [(Hq+2*Hkv)*D]: bq; bk; bv
  torch::Tensor wGateUp;       // [2*I, H]: wGate; wUp
};

/// Builds the fused matrices of `w` from the checkpoint's (when not yet
/// fused) and makes the checkpoint's names views of them, so the weights
/// take no more memory than before.
void fuseLayer(const ModelConfig &config, LayerWeights &w);

/// One LoRA adapter: W x + scale B (A x), B starting at zero.
struct LoraAdapter {
  torch::Tensor a; // [r, in]
  torch::Tensor b; // [out, r]
};

/// The adapters of one layer's projections (null where a projection has
/// none) and their common scale, alpha / rank.
struct LayerAdapters {
  const LoraAdapter *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr,
                    *gate = nullptr, *up = nullptr, *down = nullptr;
  double scale = 0;
};

/// RoPE in rotate-half form at given positions: `cos` and the sine with
/// rotate-half's sign folded in, [..., T, 1, D], broadcasting over
/// [N, T, heads, D].
struct RopeTables {
  torch::Tensor cos, sin;
};
/// The tables for `positions` ([T] or [N, T] int64), computed in float32
/// and rounded to `dtype`.
RopeTables ropeTables(const ModelConfig &config, const torch::Tensor &positions,
                      torch::ScalarType dtype);

/// Attention of a layer: q [N, T, Hq, D], k and v [N, T, Hkv, D] (RoPE
/// applied) to [N, T, Hq*D]. The caller decides which keys a query sees and
/// where keys and values are kept.
using Attend = std::function<torch::Tensor(
    const torch::Tensor &q, const torch::Tensor &k, const torch::Tensor &v)>;

/// Qwen-style RMSNorm: normalise in float32, round to x's dtype, then scale.
torch::Tensor rmsNorm(const torch::Tensor &x, const torch::Tensor &weight,
                      double eps);

/// One decoder layer over x [N, T, H]. Products run in x's dtype, or in
/// autocast's where it is on; the residual stream keeps x's dtype.
torch::Tensor decoderLayer(const ModelConfig &config, const LayerWeights &w,
                           const torch::Tensor &x, const RopeTables &rope,
                           const Attend &attend,
                           const LayerAdapters *adapters = nullptr);

/// Logits [..., V] of hidden states [..., H] that went through the final
/// norm (logit i predicts token i itself).
torch::Tensor headLogits(const torch::Tensor &normed, const torch::Tensor &lmHead);

} // namespace dice

#endif // DICE_MODEL_DECODERLAYER_H
