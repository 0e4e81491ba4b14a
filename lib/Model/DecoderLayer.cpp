//===- DecoderLayer.cpp - the one decoder layer ---------------------------===//

#include "dice/Model/DecoderLayer.h"

#include <ATen/autocast_mode.h>

#include <initializer_list>
#include <utility>

namespace dice {
namespace {

/// `w` as a matrix-product operand of `x`: as it is where autocast casts
/// the product anyway (no float32 copy of a bfloat16 base), else in x's
/// dtype.
torch::Tensor operand(const torch::Tensor &w, const torch::Tensor &x) {
  if (x.is_cuda() && at::autocast::is_autocast_enabled(at::kCUDA))
    return w;
  return w.scalar_type() == x.scalar_type() ? w : w.to(x.scalar_type());
}

/// A fused projection's piece: its adapter (or none) and its output rows.
using Piece = std::pair<const LoraAdapter *, int64_t>;

/// x W^T + b, plus each piece's low-rank update in its rows of the output.
torch::Tensor project(const torch::Tensor &x, const torch::Tensor &w,
                      const torch::Tensor &bias, std::initializer_list<Piece> pieces,
                      double scale) {
  torch::Tensor y = bias.defined() ? at::linear(x, operand(w, x), operand(bias, x))
                                   : at::linear(x, operand(w, x));
  const LoraAdapter *some = nullptr;
  for (const Piece &piece : pieces)
    some = some ? some : piece.first;
  if (!some)
    return y;
  std::vector<torch::Tensor> parts;
  for (const auto &[adapter, rows] : pieces) {
    if (adapter) {
      const torch::Tensor &a = adapter->a, &b = adapter->b;
      parts.push_back(torch::matmul(torch::matmul(x.to(a.scalar_type()), a.t()), b.t()));
    } else {
      std::vector<int64_t> shape = x.sizes().vec();
      shape.back() = rows;
      parts.push_back(torch::zeros(shape, x.options().dtype(some->a.scalar_type())));
    }
  }
  torch::Tensor low = parts.size() == 1 ? parts.front() : torch::cat(parts, -1);
  return y + (low * scale).to(y.scalar_type());
}

/// [a, b] -> [b, a] over the last dimension's halves: rotate-half without
/// its sign, which the sine table carries.
torch::Tensor swapHalves(const torch::Tensor &x) {
  int64_t half = x.size(-1) / 2;
  return x.unflatten(-1, {2, half}).flip(-2).flatten(-2);
}

} // namespace

void fuseLayer(const ModelConfig &c, LayerWeights &w) {
  torch::NoGradGuard noGrad;
  const int64_t q = c.numAttentionHeads * c.headDim, kv = c.numKeyValueHeads * c.headDim,
                inter = c.intermediateSize;
  if (!w.wqkv.defined())
    w.wqkv = torch::cat({w.wq, w.wk, w.wv}, 0);
  w.wq = w.wqkv.narrow(0, 0, q);
  w.wk = w.wqkv.narrow(0, q, kv);
  w.wv = w.wqkv.narrow(0, q + kv, kv);
  if (c.qkvBias) {
    if (!w.bqkv.defined())
      w.bqkv = torch::cat({w.bq, w.bk, w.bv}, 0);
    w.bq = w.bqkv.narrow(0, 0, q);
    w.bk = w.bqkv.narrow(0, q, kv);
    w.bv = w.bqkv.narrow(0, q + kv, kv);
  }
  if (!w.wGateUp.defined())
    w.wGateUp = torch::cat({w.wGate, w.wUp}, 0);
  w.wGate = w.wGateUp.narrow(0, 0, inter);
  w.wUp = w.wGateUp.narrow(0, inter, inter);
}

RopeTables ropeTables(const ModelConfig &c, const torch::Tensor &positions,
                      torch::ScalarType dtype) {
  const int64_t d = c.headDim;
  auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(positions.device());
  // Frequency j is shared by dims j and j + D/2.
  torch::Tensor invFreq =
      1.0 / torch::pow(c.ropeTheta, torch::arange(0, d, 2, f32) / double(d));
  torch::Tensor angles = positions.to(torch::kFloat32).unsqueeze(-1) * invFreq;
  torch::Tensor cos = angles.cos(), sin = angles.sin(); // [..., T, D/2]
  // rotate_half(x) * sin == swapHalves(x) * [-sin, sin].
  return {torch::cat({cos, cos}, -1).to(dtype).unsqueeze(-2),
          torch::cat({-sin, sin}, -1).to(dtype).unsqueeze(-2)};
}

torch::Tensor rmsNorm(const torch::Tensor &x, const torch::Tensor &weight,
                      double eps) {
  // at::rms_norm without a weight normalises in float32; rounded to x's
  // dtype (autocast would keep float32) and then scaled, as Qwen2RMSNorm
  // and Qwen3RMSNorm do.
  return weight * at::rms_norm(x, {x.size(-1)}, std::nullopt, eps).to(x.scalar_type());
}

torch::Tensor decoderLayer(const ModelConfig &c, const LayerWeights &w,
                           const torch::Tensor &x, const RopeTables &rope,
                           const Attend &attend, const LayerAdapters *adapters) {
  const int64_t n = x.size(0), t = x.size(1);
  const int64_t hq = c.numAttentionHeads, hkv = c.numKeyValueHeads, d = c.headDim,
                h = c.hiddenSize, inter = c.intermediateSize;
  const double eps = c.rmsNormEps;
  const LayerAdapters none;
  const LayerAdapters &ad = adapters ? *adapters : none;

  torch::Tensor normed = rmsNorm(x, w.inputNorm, eps);
  torch::Tensor qkv = project(normed, w.wqkv, w.bqkv,
                              {{ad.q, hq * d}, {ad.k, hkv * d}, {ad.v, hkv * d}}, ad.scale)
                          .view({n, t, hq + 2 * hkv, d});
  // q and k together: [N, T, Hq+Hkv, D].
  torch::Tensor qk = qkv.narrow(2, 0, hq + hkv);
  if (c.qkNorm)
    qk = rmsNorm(qk, torch::cat({w.qNorm.expand({hq, d}), w.kNorm.expand({hkv, d})}), eps);
  qk = qk * rope.cos.to(qk.scalar_type()) + swapHalves(qk) * rope.sin.to(qk.scalar_type());
  torch::Tensor attended =
      attend(qk.narrow(2, 0, hq), qk.narrow(2, hq, hkv), qkv.narrow(2, hq + hkv, hkv));
  torch::Tensor out =
      x + project(attended, w.wo, w.bo, {{ad.o, h}}, ad.scale).to(x.scalar_type());

  normed = rmsNorm(out, w.postNorm, eps);
  torch::Tensor gateUp =
      project(normed, w.wGateUp, {}, {{ad.gate, inter}, {ad.up, inter}}, ad.scale);
  torch::Tensor act =
      torch::silu(gateUp.narrow(-1, 0, inter)) * gateUp.narrow(-1, inter, inter);
  return out + project(act, w.wDown, {}, {{ad.down, h}}, ad.scale).to(out.scalar_type());
}

torch::Tensor headLogits(const torch::Tensor &normed, const torch::Tensor &lmHead) {
  return at::linear(normed, operand(lmHead, normed));
}

} // namespace dice
