//===- Transformer.cpp - the block-diffusion transformer ------------------===//
//
//   x = embed(ids)
//   for each layer: x = decoderLayer(x)     DecoderLayer.h; attention
//                                           block-causal over the KV cache
//   logits = rmsnorm(x) Wlm_head            logit i predicts token i (no shift)
//
// Two forwards run the same layers and differ in attention only. `forward`
// is the reference: any positions, shapes that follow cache.length, SDPA
// with GQA; prefill and the numerics checks use it. `stepForward` is the
// block-step path the sampler drives: shapes that depend only on (N, T) and
// a bucket of key positions, with the start position in a device tensor, so
// on CUDA each shape is captured once as a graph and replayed for every
// block (a block step at batch 1 is a few hundred small kernels: launch
// overhead would otherwise cost as much as reading the weights).
//
//===----------------------------------------------------------------------===//

#include "dice/Model/Transformer.h"

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

/// (N, T, keys, logit positions, block size, cache keys, cache capacity):
/// what a captured graph has baked in.
using StepGraphKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t,
                                const void *, int64_t>;

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
  for (LayerWeights &lw : w.layers)
    fuseLayer(cfg, lw);
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

  auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(ids.device());
  RopeTables rope = ropeTables(cfg, torch::arange(start, keys, i64), dtype());
  // A block-aligned query block sees everything: no mask, so SDPA may pick
  // its fastest kernel. Otherwise (prefill) the block-causal mask.
  std::optional<torch::Tensor> mask;
  if (!(start % blockSize == 0 && t <= blockSize))
    mask = blockCausalMask(start, t, keys, blockSize, ids.device()); // [T, S]

  int64_t layer = 0;
  Attend attend = [&](const torch::Tensor &q, const torch::Tensor &k,
                      const torch::Tensor &v) {
    // The block's KV goes just past the stored prefix; whether it stays is
    // only a matter of advancing cache.length afterwards.
    torch::Tensor layerKeys = cache.keys[layer];     // [N, Hkv, Tmax, D]
    torch::Tensor layerValues = cache.values[layer]; // [N, Hkv, Tmax, D]
    layerKeys.narrow(2, start, t).copy_(k.transpose(1, 2));
    layerValues.narrow(2, start, t).copy_(v.transpose(1, 2));
    torch::Tensor attn = at::scaled_dot_product_attention(
        q.transpose(1, 2), layerKeys.narrow(2, 0, keys), layerValues.narrow(2, 0, keys),
        mask, /*dropout_p=*/0.0, /*is_causal=*/false, /*scale=*/std::nullopt,
        /*enable_gqa=*/hq != hkv); // [N, Hq, T, D]
    return attn.transpose(1, 2).reshape({n, t, hq * d});
  };
  torch::Tensor x = F::embedding(ids, w.embedding); // [N, T, H]
  for (layer = 0; layer < cfg.numHiddenLayers; ++layer)
    x = decoderLayer(cfg, w.layers[size_t(layer)], x, rope, attend);
  if (storeKv)
    cache.length = keys;
  if (!wantLogits)
    return {};
  return headLogits(rmsNorm(x, w.finalNorm, cfg.rmsNormEps), w.lmHead); // [N, T, V]
}

torch::Tensor Transformer::stepForward(const torch::Tensor &ids,
                                       const torch::Tensor &start,
                                       KVCache &cache, int64_t blockSize,
                                       int64_t keys, int64_t logitPositions) {
  torch::NoGradGuard noGrad;
  const int64_t n = ids.size(0), t = ids.size(1);
  const int64_t hq = cfg.numAttentionHeads, hkv = cfg.numKeyValueHeads,
                d = cfg.headDim, group = hq / hkv;
  auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(ids.device());

  // Positions, RoPE rows and the mask come from the device tensor `start`,
  // so nothing here depends on where in the sequence the block is.
  torch::Tensor positions = start + torch::arange(t, i64); // [T]
  RopeTables rope = ropeTables(cfg, positions, dtype());
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

  int64_t layer = 0;
  Attend attend = [&](const torch::Tensor &q, const torch::Tensor &k,
                      const torch::Tensor &v) {
    torch::Tensor layerKeys = cache.keys[layer];     // [N, Hkv, Tmax, D]
    torch::Tensor layerValues = cache.values[layer]; // [N, Hkv, Tmax, D]
    layerKeys.index_copy_(2, positions, k.transpose(1, 2));
    layerValues.index_copy_(2, positions, v.transpose(1, 2));
    torch::Tensor grouped = q.reshape({n, t, hkv, group, d})
                                .permute({0, 2, 1, 3, 4})
                                .reshape({n, hkv, t * group, d}); // [N, Hkv, T*G, D]
    torch::Tensor attn = at::scaled_dot_product_attention(
        grouped, layerKeys.narrow(2, 0, keys), layerValues.narrow(2, 0, keys), bias,
        /*dropout_p=*/0.0, /*is_causal=*/false,
        /*scale=*/1.0 / std::sqrt(double(d))); // [N, Hkv, T*G, D]
    return attn.reshape({n, hkv, t, group, d})
        .permute({0, 2, 1, 3, 4})
        .reshape({n, t, hq * d});
  };
  torch::Tensor x = F::embedding(ids, w.embedding); // [N, T, H]
  for (layer = 0; layer < cfg.numHiddenLayers; ++layer)
    x = decoderLayer(cfg, w.layers[size_t(layer)], x, rope, attend);
  if (logitPositions == 0)
    return {};
  torch::Tensor last = x.narrow(1, t - logitPositions, logitPositions);
  return headLogits(rmsNorm(last, w.finalNorm, cfg.rmsNormEps), w.lmHead); // [N, P, V]
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
                   cache.capacity()};
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
