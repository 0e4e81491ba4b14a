//===- PolicyModel.cpp - the SDAR/Qwen3 transformer, trainable ------------===//
//
// The same math as model/Transformer.cpp's reference forward (RMSNorm in
// fp32, per-head q/k norms, RoPE in rotate-half form, GQA, SwiGLU, logit i
// predicting token i), over a whole sequence and an explicit mask, with
// autograd. The unit tests hold the two forwards to the same logits.
//
//===----------------------------------------------------------------------===//

#include "dice/Train/PolicyModel.h"
#include "dice/Model/TransformerMath.h"

#include <ATen/autocast_mode.h>

#include <cmath>
#include <set>

namespace dice {
namespace {

namespace F = torch::nn::functional;

const std::set<std::string> &projections() {
  static const std::set<std::string> names = {
      "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  return names;
}

/// "model.layers.3.self_attn.q_proj.weight" -> "q_proj"; "" otherwise.
std::string projectionOf(const std::string &name) {
  const std::string suffix = ".weight";
  if (name.size() <= suffix.size() ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0 ||
      name.rfind("model.layers.", 0) != 0)
    return "";
  std::string stem = name.substr(0, name.size() - suffix.size());
  std::string last = stem.substr(stem.rfind('.') + 1);
  return projections().count(last) ? last : "";
}

/// `w` as a matrix-product operand of `x`: as it is where autocast casts
/// the product anyway (no fp32 copy of a bf16 base), else in x's dtype.
torch::Tensor operand(const torch::Tensor &w, const torch::Tensor &x) {
  if (x.is_cuda() && at::autocast::is_autocast_enabled(at::kCUDA))
    return w;
  return w.scalar_type() == x.scalar_type() ? w : w.to(x.scalar_type());
}

std::string layerPrefix(int64_t index) {
  return "model.layers." + std::to_string(index) + ".";
}

} // namespace

/// Recomputes a decoder layer in the backward pass instead of keeping its
/// activations: memory per layer falls to its input.
struct PolicyModel::LayerCheckpoint
    : torch::autograd::Function<PolicyModel::LayerCheckpoint> {
  static torch::Tensor forward(torch::autograd::AutogradContext *ctx,
                               torch::Tensor x, at::TensorList params,
                               int64_t model, int64_t index, torch::Tensor cos,
                               torch::Tensor sin, torch::Tensor mask) {
    ctx->save_for_backward({x});
    ctx->saved_data["params"] = params.vec();
    ctx->saved_data["model"] = model;
    ctx->saved_data["index"] = index;
    ctx->saved_data["cos"] = cos;
    ctx->saved_data["sin"] = sin;
    ctx->saved_data["mask"] = mask;
    ctx->saved_data["autocast"] = at::autocast::is_autocast_enabled(at::kCUDA);
    torch::NoGradGuard noGrad;
    return reinterpret_cast<const PolicyModel *>(model)->layer(index, x, cos, sin, mask);
  }

  static torch::autograd::variable_list
  backward(torch::autograd::AutogradContext *ctx,
           torch::autograd::variable_list grads) {
    const auto *model =
        reinterpret_cast<const PolicyModel *>(ctx->saved_data["model"].toInt());
    torch::Tensor x = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    torch::autograd::variable_list inputs = {x};
    std::vector<torch::Tensor> params = ctx->saved_data["params"].toTensorVector();
    inputs.insert(inputs.end(), params.begin(), params.end());
    // The backward pass may run on another thread: autocast is per thread.
    const bool autocast = ctx->saved_data["autocast"].toBool();
    const bool was = at::autocast::is_autocast_enabled(at::kCUDA);
    at::autocast::set_autocast_enabled(at::kCUDA, autocast);
    torch::Tensor y;
    {
      torch::AutoGradMode enable(true);
      y = model->layer(ctx->saved_data["index"].toInt(), x,
                       ctx->saved_data["cos"].toTensor(),
                       ctx->saved_data["sin"].toTensor(),
                       ctx->saved_data["mask"].toTensor());
    }
    at::autocast::set_autocast_enabled(at::kCUDA, was);
    torch::autograd::variable_list out = torch::autograd::grad(
        {y}, inputs, {grads[0]}, /*retain_graph=*/false, /*create_graph=*/false,
        /*allow_unused=*/true);
    // model, index, cos, sin, mask: no gradients.
    for (int k = 0; k < 5; ++k)
      out.push_back(torch::Tensor());
    return out;
  }
};

torch::Device PolicyModel::device() const {
  return weights.at("model.embed_tokens.weight").device();
}

Result<PolicyModel> PolicyModel::load(const std::string &dir,
                                      torch::Device device,
                                      const LoraOptions &lora) {
  Result<ModelConfig> config = loadModelConfig(dir);
  if (!config)
    return config.error();
  // Full fine-tuning trains fp32 masters; LoRA keeps the frozen base in the
  // checkpoint's dtype on a GPU (the 8B base in bf16 fits beside its
  // activations), fp32 on a CPU.
  torch::ScalarType dtype = torch::kFloat32;
  if (lora.rank > 0 && device.is_cuda())
    dtype = toScalarType(config->torchDtype);
  Result<TransformerWeights> loaded =
      loadTransformerWeights(dir, *config, device, dtype);
  if (!loaded)
    return loaded.error();
  PolicyModel model;
  model.cfg = *config;
  model.lora = lora;
  TransformerWeights w = loaded.take();
  for (auto &[name, tensor] : namedWeights(model.cfg, w)) {
    model.order.push_back(name);
    model.weights[name] = *tensor;
  }
  model.initAdapters(0);
  return model;
}

PolicyModel PolicyModel::random(const ModelConfig &config, torch::Device device,
                                const LoraOptions &lora, uint64_t seed) {
  PolicyModel model;
  model.cfg = config;
  model.lora = lora;
  torch::ScalarType dtype = lora.rank > 0 && device.is_cuda()
                                ? toScalarType(config.torchDtype)
                                : torch::kFloat32;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto opts = torch::TensorOptions().dtype(dtype).device(device);
  for (const auto &[name, shape] : checkpointTensorShapes(config)) {
    model.order.push_back(name);
    bool norm = name.find("norm") != std::string::npos;
    torch::Tensor t;
    if (norm) {
      t = torch::ones(shape, opts);
    } else if (device.is_cuda()) {
      // Large shapes: draw on the device from a seeded device generator.
      auto cudaGen = at::globalContext()
                         .defaultGenerator(device)
                         .clone();
      cudaGen.set_current_seed(seed + model.order.size());
      t = torch::empty(shape, opts).normal_(0, 0.02, cudaGen);
    } else {
      t = torch::empty(shape, torch::kFloat32).normal_(0, 0.02, gen).to(opts);
    }
    model.weights[name] = t;
  }
  model.initAdapters(seed);
  return model;
}

void PolicyModel::initAdapters(uint64_t seed) {
  bool full = lora.rank == 0;
  for (auto &[name, w] : weights)
    w.set_requires_grad(full);
  if (full)
    return;
  std::set<std::string> targets(lora.targets.begin(), lora.targets.end());
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed ^ 0x4c6f5241ull);
  for (const std::string &name : order) {
    std::string proj = projectionOf(name);
    if (proj.empty() || !targets.count(proj))
      continue;
    const torch::Tensor &w = weights.at(name);
    int64_t out = w.size(0), in = w.size(1);
    auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
    // A as nn.Linear initialises weights (Kaiming uniform, a = sqrt(5)),
    // B at zero: the adapted model starts as the base model.
    double bound = 1.0 / std::sqrt(double(in));
    LoraAdapter adapter;
    adapter.a = torch::empty({lora.rank, in}, f32)
                    .uniform_(-bound, bound, gen)
                    .to(w.device())
                    .set_requires_grad(true);
    adapter.b = torch::zeros({out, lora.rank}, f32.device(w.device()))
                    .set_requires_grad(true);
    adapters[name] = adapter;
  }
}

torch::Tensor PolicyModel::project(const torch::Tensor &x,
                                   const std::string &name) const {
  const torch::Tensor &w = weights.at(name);
  torch::Tensor y = torch::matmul(x, operand(w, x).t());
  auto it = adapters.find(name);
  if (it == adapters.end())
    return y;
  double scale = lora.alpha / double(lora.rank);
  torch::Tensor a = it->second.a, b = it->second.b;
  torch::Tensor low = torch::matmul(torch::matmul(x.to(a.scalar_type()), a.t()), b.t());
  return y + (low * scale).to(y.scalar_type());
}

torch::Tensor PolicyModel::layer(int64_t index, const torch::Tensor &x,
                                 const torch::Tensor &cos, const torch::Tensor &sin,
                                 const torch::Tensor &mask) const {
  const std::string p = layerPrefix(index);
  const int64_t n = x.size(0), t = x.size(1);
  const int64_t hq = cfg.numAttentionHeads, hkv = cfg.numKeyValueHeads,
                d = cfg.headDim;
  const double eps = cfg.rmsNormEps;
  torch::Tensor h = rmsNorm(x, weights.at(p + "input_layernorm.weight"), eps);
  torch::Tensor q = project(h, p + "self_attn.q_proj.weight").view({n, t, hq, d});
  torch::Tensor k = project(h, p + "self_attn.k_proj.weight").view({n, t, hkv, d});
  torch::Tensor v = project(h, p + "self_attn.v_proj.weight").view({n, t, hkv, d});
  q = rmsNorm(q, weights.at(p + "self_attn.q_norm.weight"), eps).transpose(1, 2);
  k = rmsNorm(k, weights.at(p + "self_attn.k_norm.weight"), eps).transpose(1, 2);
  v = v.transpose(1, 2);
  q = q * cos.to(q.scalar_type()) + rotateHalf(q) * sin.to(q.scalar_type());
  k = k * cos.to(k.scalar_type()) + rotateHalf(k) * sin.to(k.scalar_type());
  if (hkv != hq) {
    k = k.repeat_interleave(hq / hkv, 1);
    v = v.repeat_interleave(hq / hkv, 1);
  }
  if (v.scalar_type() != q.scalar_type())
    v = v.to(q.scalar_type());
  torch::Tensor a = at::scaled_dot_product_attention(q, k.to(q.scalar_type()), v, mask);
  a = a.transpose(1, 2).reshape({n, t, hq * d});
  torch::Tensor out = x + project(a, p + "self_attn.o_proj.weight").to(x.scalar_type());
  h = rmsNorm(out, weights.at(p + "post_attention_layernorm.weight"), eps);
  torch::Tensor mlp = project(
      torch::silu(project(h, p + "mlp.gate_proj.weight")) *
          project(h, p + "mlp.up_proj.weight"),
      p + "mlp.down_proj.weight");
  return out + mlp.to(out.scalar_type());
}

torch::Tensor PolicyModel::hidden(const torch::Tensor &ids,
                                  const torch::Tensor &positions,
                                  const torch::Tensor &allowed) {
  const torch::Device dev = device();
  const int64_t n = ids.size(0), t = ids.size(1), d = cfg.headDim;
  const torch::Tensor &embed = weights.at("model.embed_tokens.weight");
  // The residual stream stays fp32 (autocast runs the products in bf16).
  torch::Tensor x = F::embedding(ids.to(dev), embed).to(torch::kFloat32);

  // RoPE at each token's own position (the layouts repeat positions).
  auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(dev);
  torch::Tensor invFreq =
      1.0 / torch::pow(cfg.ropeTheta, torch::arange(0, d, 2, f32) / double(d));
  torch::Tensor angles =
      positions.to(dev).to(torch::kFloat32).unsqueeze(-1) * invFreq; // [N, T, D/2]
  angles = torch::cat({angles, angles}, -1);
  // The runtime rounds its table to the model dtype; so does this.
  torch::ScalarType tableType = x.scalar_type();
  torch::Tensor cos = angles.cos().to(tableType).unsqueeze(1); // [N, 1, T, D]
  torch::Tensor sin = angles.sin().to(tableType).unsqueeze(1);
  torch::Tensor mask = allowed.to(dev).view({n, 1, t, t});

  const bool recompute = checkpointing && torch::GradMode::is_enabled();
  for (int64_t l = 0; l < cfg.numHiddenLayers; ++l) {
    if (!recompute) {
      x = layer(l, x, cos, sin, mask);
      continue;
    }
    std::vector<torch::Tensor> params;
    const std::string p = layerPrefix(l);
    for (const auto &[name, w] : weights)
      if (name.rfind(p, 0) == 0 && w.requires_grad())
        params.push_back(w);
    for (const auto &[name, a] : adapters)
      if (name.rfind(p, 0) == 0) {
        params.push_back(a.a);
        params.push_back(a.b);
      }
    x = LayerCheckpoint::apply(x, at::TensorList(params), reinterpret_cast<int64_t>(this), l, cos,
                               sin, mask);
  }
  return rmsNorm(x, weights.at("model.norm.weight"), cfg.rmsNormEps);
}

torch::Tensor PolicyModel::logits(const torch::Tensor &hidden) {
  auto it = weights.find("lm_head.weight");
  const torch::Tensor &head =
      it != weights.end() ? it->second : weights.at("model.embed_tokens.weight");
  return torch::matmul(hidden, operand(head, hidden).t()).to(torch::kFloat32);
}

std::vector<std::pair<std::string, torch::Tensor>> PolicyModel::trainable() {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  if (lora.rank == 0) {
    for (const std::string &name : order)
      out.emplace_back(name, weights.at(name));
    return out;
  }
  for (const std::string &name : order)
    if (auto it = adapters.find(name); it != adapters.end()) {
      out.emplace_back(name + ".lora_a", it->second.a);
      out.emplace_back(name + ".lora_b", it->second.b);
    }
  return out;
}

torch::Tensor PolicyModel::merged(const std::string &name) const {
  torch::NoGradGuard noGrad;
  const torch::Tensor &w = weights.at(name);
  auto it = adapters.find(name);
  if (it == adapters.end())
    return w.detach();
  double scale = lora.alpha / double(lora.rank);
  return (w.to(torch::kFloat32) +
          scale * torch::matmul(it->second.b, it->second.a))
      .to(w.scalar_type());
}

std::vector<std::pair<std::string, torch::Tensor>>
PolicyModel::checkpointTensors(torch::ScalarType dtype) const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const std::string &name : order)
    out.emplace_back(name, merged(name).to(dtype).contiguous());
  return out;
}

std::vector<std::pair<std::string, torch::Tensor>>
PolicyModel::adapterTensors() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const std::string &name : order)
    if (auto it = adapters.find(name); it != adapters.end()) {
      out.emplace_back(name + ".lora_a", it->second.a.detach());
      out.emplace_back(name + ".lora_b", it->second.b.detach());
    }
  return out;
}

Status PolicyModel::restore(const std::map<std::string, torch::Tensor> &saved) {
  torch::NoGradGuard noGrad;
  for (auto &[name, tensor] : trainable()) {
    auto it = saved.find(name);
    if (it == saved.end())
      return Error("", 0, 0, name, "missing from the checkpoint");
    if (it->second.sizes() != tensor.sizes())
      return Error("", 0, 0, name, "has another shape in the checkpoint");
    tensor.copy_(it->second);
  }
  return {};
}

TransformerWeights PolicyModel::inferenceWeights(torch::ScalarType dtype) const {
  TransformerWeights w;
  for (auto &[name, target] : namedWeights(cfg, w))
    *target = merged(name).to(dtype).contiguous();
  if (cfg.tieWordEmbeddings)
    w.lmHead = w.embedding;
  return w;
}

} // namespace dice
