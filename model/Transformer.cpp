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
// Two forwards share that math. `forward` is the reference: any positions,
// shapes that follow cache.length, SDPA with GQA; prefill and the numerics
// checks use it. `stepForward` is the block-step path the sampler drives: q/k/v
// and gate/up fused into one matrix product each, residual adds folded into
// the output projections, and shapes that depend only on (N, T) and a bucket
// of key positions, with the start position in a device tensor, so on CUDA
// each shape is captured once as a graph and replayed for every block (a
// block step at batch 1 is a few hundred small kernels: launch overhead would
// otherwise cost as much as reading the weights).
//
//===----------------------------------------------------------------------===//

#include "dice/Model/Transformer.h"
#include "dice/Model/TransformerMath.h"

#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#if __has_include(<ATen/cuda/CUDAGraph.h>) && __has_include(<cuda_runtime_api.h>)
#define DICE_HAVE_CUDA_GRAPHS 1
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#else
#define DICE_HAVE_CUDA_GRAPHS 0
#endif

namespace dice {
namespace {

namespace F = torch::nn::functional;

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

/// Key positions a fixed-shape step attends to: the keys it needs rounded up
/// to a multiple of this, so a decode of a few hundred tokens uses a handful
/// of graphs and reads at most this many unused key positions.
constexpr int64_t keyBucket = 64;

} // namespace

#if DICE_HAVE_CUDA_GRAPHS
/// One captured block-step forward with its input and output buffers.
struct StepGraph {
  at::cuda::CUDAGraph graph;
  torch::Tensor ids;    // [N, T] int64, copied in before each replay
  torch::Tensor start;  // [1] int64, the first position, set before each replay
  torch::Tensor logits; // [N, P, V] written by each replay, or undefined
};

/// (N, T, keys, logit positions, block size, cache keys, cache RoPE table,
/// cache capacity): what a captured graph has baked in.
using StepGraphKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t,
                                const void *, const void *, int64_t>;

class StepGraphCache {
public:
  std::map<StepGraphKey, std::unique_ptr<StepGraph>> graphs;
  // Graphs replay one at a time on one stream, so they share one memory
  // pool for their intermediates.
  at::cuda::MempoolId_t pool = at::cuda::graph_pool_handle();
};
#else
class StepGraphCache {};
#endif

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
    : cfg(std::move(config)), w(std::move(weights)) {
  torch::NoGradGuard noGrad;
  const int64_t d = cfg.headDim, q = cfg.numAttentionHeads * d,
                kv = cfg.numKeyValueHeads * d, inter = cfg.intermediateSize;
  // Fuse after loading (the checkpoint keeps its names); the separate
  // matrices become views, so the weights take no more memory than before.
  for (LayerWeights &lw : w.layers) {
    if (!lw.wqkv.defined()) {
      lw.wqkv = torch::cat({lw.wq, lw.wk, lw.wv}, 0);
      lw.wq = lw.wqkv.narrow(0, 0, q);
      lw.wk = lw.wqkv.narrow(0, q, kv);
      lw.wv = lw.wqkv.narrow(0, q + kv, kv);
    }
    if (!lw.wGateUp.defined()) {
      lw.wGateUp = torch::cat({lw.wGate, lw.wUp}, 0);
      lw.wGate = lw.wGateUp.narrow(0, 0, inter);
      lw.wUp = lw.wGateUp.narrow(0, inter, inter);
    }
    if (!lw.qkNorm.defined())
      lw.qkNorm = torch::cat(
          {lw.qNorm.expand({cfg.numAttentionHeads, d}),
           lw.kNorm.expand({cfg.numKeyValueHeads, d})}); // [Hq+Hkv, D]
  }
}

Transformer::~Transformer() = default;

bool Transformer::usesCudaGraphs() const {
  return DICE_HAVE_CUDA_GRAPHS && useGraphs && device().is_cuda();
}

void Transformer::clearCudaGraphs() { graphs.reset(); }

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

torch::Tensor Transformer::stepForward(const torch::Tensor &ids,
                                       const torch::Tensor &start,
                                       KVCache &cache, int64_t blockSize,
                                       int64_t keys, int64_t logitPositions) {
  torch::NoGradGuard noGrad;
  const int64_t n = ids.size(0), t = ids.size(1), rows = n * t;
  const int64_t hq = cfg.numAttentionHeads, hkv = cfg.numKeyValueHeads,
                d = cfg.headDim, group = hq / hkv, inter = cfg.intermediateSize;
  const double eps = cfg.rmsNormEps;
  auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(ids.device());

  // Positions, RoPE rows and the mask come from the device tensor `start`,
  // so nothing here depends on where in the sequence the block is.
  torch::Tensor positions = start + torch::arange(t, i64); // [T]
  torch::Tensor cos = cache.cos.index_select(0, positions).unsqueeze(1); // [T, 1, D]
  // rotate_half(x) * sin == swapHalves(x) * [-sin_lo, sin_hi].
  torch::Tensor sign = torch::ones({d}, cache.sin.options());
  sign.narrow(0, 0, d / 2).fill_(-1);
  torch::Tensor sin = (cache.sin.index_select(0, positions) * sign).unsqueeze(1);
  // A query sees key j when j's block is not after its own and j holds
  // something written (j < start + T); the -inf columns past that cost only
  // reading up to `keys` positions.
  torch::Tensor keyPos = torch::arange(keys, i64);
  torch::Tensor visible =
      (keyPos.div(blockSize, "floor").unsqueeze(0) <=
       positions.div(blockSize, "floor").unsqueeze(1)) &
      (keyPos.unsqueeze(0) < positions.narrow(0, t - 1, 1) + 1); // [T, S]
  // Queries are grouped by KV head (row t*G + g is query head h*G + g at
  // position t), so attention is plain multi-head over Hkv heads and never
  // copies the cache to Hq heads.
  torch::Tensor bias =
      torch::zeros({t, keys}, cache.keys.options())
          .masked_fill_(visible.logical_not(), -std::numeric_limits<double>::infinity())
          .unsqueeze(1)
          .expand({t, group, keys})
          .reshape({t * group, keys}); // [T*G, S]

  torch::Tensor x = F::embedding(ids, w.embedding).view({rows, -1}); // [N*T, H]
  for (int64_t l = 0; l < cfg.numHiddenLayers; ++l) {
    const LayerWeights &lw = w.layers[size_t(l)];

    torch::Tensor h = at::rms_norm(x, {x.size(1)}, lw.inputNorm, eps);
    torch::Tensor qkv = torch::mm(h, lw.wqkv.t()).view({n, t, hq + 2 * hkv, d});
    // Per-head RMSNorm and RoPE of q and k together: [N, T, Hq+Hkv, D].
    torch::Tensor qk = at::rms_norm(qkv.narrow(2, 0, hq + hkv), {d}, std::nullopt, eps)
                           .mul_(lw.qkNorm);
    torch::Tensor swapped =
        qk.view({n, t, hq + hkv, 2, d / 2}).flip(3).view({n, t, hq + hkv, d});
    qk = torch::addcmul(qk * cos, swapped, sin);

    torch::Tensor q = qk.narrow(2, 0, hq)
                          .view({n, t, hkv, group, d})
                          .permute({0, 2, 1, 3, 4})
                          .reshape({n, hkv, t * group, d}); // [N, Hkv, T*G, D]
    torch::Tensor k = qk.narrow(2, hq, hkv).transpose(1, 2);         // [N, Hkv, T, D]
    torch::Tensor v = qkv.narrow(2, hq + hkv, hkv).transpose(1, 2);  // [N, Hkv, T, D]
    torch::Tensor layerKeys = cache.keys[l];     // [N, Hkv, Tmax, D]
    torch::Tensor layerValues = cache.values[l]; // [N, Hkv, Tmax, D]
    layerKeys.index_copy_(2, positions, k);
    layerValues.index_copy_(2, positions, v);

    torch::Tensor attn = at::scaled_dot_product_attention(
        q, layerKeys.narrow(2, 0, keys), layerValues.narrow(2, 0, keys), bias,
        /*dropout_p=*/0.0, /*is_causal=*/false,
        /*scale=*/1.0 / std::sqrt(double(d))); // [N, Hkv, T*G, D]
    attn = attn.reshape({n, hkv, t, group, d})
               .permute({0, 2, 1, 3, 4})
               .reshape({rows, hq * d}); // [N*T, Hq*D]
    x.addmm_(attn, lw.wo.t()); // residual add inside the product

    h = at::rms_norm(x, {x.size(1)}, lw.postNorm, eps);
    torch::Tensor gateUp = torch::mm(h, lw.wGateUp.t()); // [N*T, 2I]
    torch::Tensor act = torch::silu(gateUp.narrow(1, 0, inter))
                            .mul_(gateUp.narrow(1, inter, inter)); // [N*T, I]
    x.addmm_(act, lw.wDown.t());
  }
  if (logitPositions == 0)
    return {};
  torch::Tensor last = x.view({n, t, -1}).narrow(1, t - logitPositions, logitPositions);
  return F::linear(at::rms_norm(last, {last.size(2)}, w.finalNorm, eps),
                   w.lmHead); // [N, P, V]
}

torch::Tensor Transformer::runStep(const std::vector<torch::Tensor> &blocks,
                                   KVCache &cache, int64_t blockSize,
                                   int64_t logitPositions) {
  torch::NoGradGuard noGrad;
  const int64_t n = blocks.front().size(0);
  int64_t t = 0;
  for (const torch::Tensor &b : blocks)
    t += b.size(1);
  const int64_t needed = cache.length + t;
  TORCH_CHECK(needed <= cache.capacity(), "KV cache of ", cache.capacity(),
              " positions cannot hold ", needed);
  TORCH_CHECK(n == cache.batch(), "batch ", n, " != cache batch ", cache.batch());
  const int64_t keys =
      std::min((needed + keyBucket - 1) / keyBucket * keyBucket, cache.capacity());

  auto fillIds = [&](torch::Tensor &ids) {
    int64_t at = 0;
    for (const torch::Tensor &b : blocks) {
      ids.narrow(1, at, b.size(1)).copy_(b);
      at += b.size(1);
    }
  };
  auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(device());

  if (!usesCudaGraphs()) {
    torch::Tensor ids = torch::empty({n, t}, i64);
    fillIds(ids);
    return stepForward(ids, torch::full({1}, cache.length, i64), cache,
                       blockSize, keys, logitPositions);
  }
#if DICE_HAVE_CUDA_GRAPHS
  if (!graphs)
    graphs = std::make_unique<StepGraphCache>();
  StepGraphKey key{n,         t,
                   keys,      logitPositions,
                   blockSize, cache.keys.data_ptr(),
                   cache.cos.data_ptr(), cache.capacity()};
  std::unique_ptr<StepGraph> &slot = graphs->graphs[key];
  if (!slot) {
    auto graph = std::make_unique<StepGraph>();
    graph->ids = torch::empty({n, t}, i64);
    graph->start = torch::full({1}, cache.length, i64);
    fillIds(graph->ids);
    // Capture on a side stream after one ordinary run there, which creates
    // the library handles and workspaces the capture must not allocate.
    c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream();
    current.synchronize();
    c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
    {
      c10::cuda::CUDAStreamGuard guard(side);
      stepForward(graph->ids, graph->start, cache, blockSize, keys, logitPositions);
      side.synchronize();
      // Thread-local capture: other threads may keep using the device.
      graph->graph.capture_begin(graphs->pool, cudaStreamCaptureModeThreadLocal);
      graph->logits = stepForward(graph->ids, graph->start, cache, blockSize,
                                  keys, logitPositions);
      graph->graph.capture_end();
      side.synchronize();
    }
    slot = std::move(graph);
  } else {
    fillIds(slot->ids);
    slot->start.fill_(cache.length);
  }
  slot->graph.replay();
  return slot->logits;
#else
  return {};
#endif
}

torch::Tensor Transformer::denoiseBlock(const torch::Tensor &ids, KVCache &cache) {
  return runStep({ids}, cache, ids.size(1), ids.size(1));
}

void Transformer::commitBlock(const torch::Tensor &ids, KVCache &cache) {
  runStep({ids}, cache, ids.size(1), 0);
  cache.length += ids.size(1);
}

torch::Tensor Transformer::commitAndDenoise(const torch::Tensor &done,
                                            const torch::Tensor &next,
                                            KVCache &cache) {
  torch::Tensor logits = runStep({done, next}, cache, done.size(1), next.size(1));
  cache.length += done.size(1);
  return logits;
}

} // namespace dice
