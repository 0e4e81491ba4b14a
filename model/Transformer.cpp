//===- Transformer.cpp - the SDAR/Qwen3 block-diffusion transformer -------===//
//
//   x = embed(ids)
//   for each layer:
//     h = rmsnorm(x)
//     q, k, v = h Wq, h Wk, h Wv            per-head RMSNorm on q and k, RoPE
//     x = x + attention(q, [cache k; k], [cache v; v]) Wo    block-causal, GQA
//     h = rmsnorm(x)
//     x = x + (silu(h Wgate) * h Wup) Wdown                  SwiGLU
//   logits = rmsnorm(x) Wlm_head            logit i predicts token i (no shift)
//
// Every step works on preallocated cache slices whose shapes depend only on
// (N, T, cache.length), all known on the host before a block starts, so a
// block's steps need no host synchronisation.
//
//===----------------------------------------------------------------------===//

#include "dice/Model/Transformer.h"

namespace dice {
namespace {

namespace F = torch::nn::functional;

/// Qwen3RMSNorm: normalise in fp32, scale in the input dtype.
torch::Tensor rmsNorm(const torch::Tensor &x, const torch::Tensor &weight,
                      double eps) {
  torch::Tensor x32 = x.to(torch::kFloat32);
  torch::Tensor normed =
      x32 * torch::rsqrt(x32.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return weight * normed.to(x.scalar_type());
}

/// [a, b] -> [-b, a] over the last dimension's halves.
torch::Tensor rotateHalf(const torch::Tensor &x) {
  int64_t half = x.size(-1) / 2;
  return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

/// x [N, H, T, D], cos/sin [T, D].
torch::Tensor applyRope(const torch::Tensor &x, const torch::Tensor &cos,
                        const torch::Tensor &sin) {
  return x * cos + rotateHalf(x) * sin;
}

/// True where query position (start + i) may see key position j: the key's
/// block is not after the query's.
torch::Tensor blockCausalMask(int64_t start, int64_t queries, int64_t keys,
                              int64_t blockSize, torch::Device device) {
  auto opts = torch::TensorOptions().dtype(torch::kInt64).device(device);
  torch::Tensor queryBlock =
      torch::arange(start, start + queries, opts).div(blockSize, "floor");
  torch::Tensor keyBlock = torch::arange(0, keys, opts).div(blockSize, "floor");
  return keyBlock.unsqueeze(0) <= queryBlock.unsqueeze(1); // [T, S]
}

} // namespace

KVCache KVCache::rows(int64_t first, int64_t count) const {
  KVCache view = *this;
  view.keys = keys.narrow(1, first, count);
  view.values = values.narrow(1, first, count);
  return view;
}

void KVCache::broadcastRow(int64_t row) {
  // Rows before and after `row` separately: a copy may not overlap its source.
  auto spread = [&](torch::Tensor &t) {
    torch::Tensor stored = t.narrow(3, 0, length); // [L, N, Hkv, len, D]
    torch::Tensor source = stored.narrow(1, row, 1);
    for (auto [first, count] : {std::pair<int64_t, int64_t>{0, row},
                                {row + 1, batch() - row - 1}})
      if (count > 0)
        stored.narrow(1, first, count).copy_(source.expand({-1, count, -1, -1, -1}));
  };
  if (length == 0)
    return;
  spread(keys);
  spread(values);
}

Transformer::Transformer(ModelConfig config, TransformerWeights weights)
    : cfg(std::move(config)), w(std::move(weights)) {}

KVCache Transformer::allocateCache(int64_t batch, int64_t capacity) const {
  auto opts = torch::TensorOptions().dtype(dtype()).device(device());
  KVCache cache;
  cache.keys = torch::zeros({cfg.numHiddenLayers, batch, cfg.numKeyValueHeads,
                             capacity, cfg.headDim},
                            opts);
  cache.values = torch::zeros_like(cache.keys);

  // RoPE in rotate_half form: frequency j is shared by dims j and j + D/2.
  auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(device());
  torch::Tensor invFreq =
      1.0 / torch::pow(cfg.ropeTheta,
                       torch::arange(0, cfg.headDim, 2, f32) / double(cfg.headDim));
  torch::Tensor angles =
      torch::outer(torch::arange(capacity, f32), invFreq); // [Tmax, D/2]
  angles = torch::cat({angles, angles}, -1);              // [Tmax, D]
  cache.cos = angles.cos().to(dtype());
  cache.sin = angles.sin().to(dtype());
  return cache;
}

torch::Tensor Transformer::forward(const torch::Tensor &ids, KVCache &cache,
                                   int64_t blockSize, bool storeKv,
                                   bool wantLogits) {
  torch::NoGradGuard noGrad;
  const int64_t n = ids.size(0), t = ids.size(1);
  const int64_t start = cache.length, keys = start + t;
  const int64_t hq = cfg.numAttentionHeads, hkv = cfg.numKeyValueHeads,
                d = cfg.headDim;
  TORCH_CHECK(keys <= cache.capacity(), "KV cache of ", cache.capacity(),
              " positions cannot hold ", keys);
  TORCH_CHECK(n == cache.batch(), "batch ", n, " != cache batch ", cache.batch());

  torch::Tensor cos = cache.cos.narrow(0, start, t); // [T, D]
  torch::Tensor sin = cache.sin.narrow(0, start, t);
  // A block-aligned query block sees everything: no mask, so SDPA may pick
  // its fastest kernel. Otherwise (prefill) the block-causal mask.
  std::optional<torch::Tensor> mask;
  if (!(start % blockSize == 0 && t <= blockSize))
    mask = blockCausalMask(start, t, keys, blockSize, ids.device()); // [T, S]

  torch::Tensor x = F::embedding(ids, w.embedding); // [N, T, H]
  for (int64_t l = 0; l < cfg.numHiddenLayers; ++l) {
    const LayerWeights &lw = w.layers[size_t(l)];

    torch::Tensor h = rmsNorm(x, lw.inputNorm, cfg.rmsNormEps);
    torch::Tensor q = F::linear(h, lw.wq).view({n, t, hq, d});  // [N, T, Hq, D]
    torch::Tensor k = F::linear(h, lw.wk).view({n, t, hkv, d}); // [N, T, Hkv, D]
    torch::Tensor v = F::linear(h, lw.wv).view({n, t, hkv, d});
    q = applyRope(rmsNorm(q, lw.qNorm, cfg.rmsNormEps).transpose(1, 2), cos,
                  sin); // [N, Hq, T, D]
    k = applyRope(rmsNorm(k, lw.kNorm, cfg.rmsNormEps).transpose(1, 2), cos,
                  sin); // [N, Hkv, T, D]
    v = v.transpose(1, 2); // [N, Hkv, T, D]

    // The block's KV goes just past the stored prefix; whether it stays is
    // only a matter of advancing cache.length afterwards.
    torch::Tensor layerKeys = cache.keys[l];     // [N, Hkv, Tmax, D]
    torch::Tensor layerValues = cache.values[l]; // [N, Hkv, Tmax, D]
    layerKeys.narrow(2, start, t).copy_(k);
    layerValues.narrow(2, start, t).copy_(v);

    torch::Tensor attn = at::scaled_dot_product_attention(
        q, layerKeys.narrow(2, 0, keys), layerValues.narrow(2, 0, keys), mask,
        /*dropout_p=*/0.0, /*is_causal=*/false, /*scale=*/std::nullopt,
        /*enable_gqa=*/hq != hkv); // [N, Hq, T, D]
    x = x + F::linear(attn.transpose(1, 2).reshape({n, t, hq * d}), lw.wo);

    h = rmsNorm(x, lw.postNorm, cfg.rmsNormEps);
    x = x + F::linear(torch::silu(F::linear(h, lw.wGate)) * F::linear(h, lw.wUp),
                      lw.wDown); // [N, T, H]
  }
  if (storeKv)
    cache.length = keys;
  if (!wantLogits)
    return {};
  return F::linear(rmsNorm(x, w.finalNorm, cfg.rmsNormEps), w.lmHead); // [N, T, V]
}

} // namespace dice
