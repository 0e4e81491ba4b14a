//===- PolicyModel.cpp - the decoder, trainable ---------------------------===//
//
// The runtime's decoderLayer over a whole sequence and an explicit mask,
// with autograd. The unit tests hold the policy's logits to the runtime
// transformer's.
//
//===----------------------------------------------------------------------===//

#include "dice/Train/PolicyModel.h"

#include <ATen/autocast_mode.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace dice {
namespace {

namespace F = torch::nn::functional;

/// q, k, v, o, gate, up, down: a layer's projections, the order of Adapters.
const auto &kProjections = kAdapterTargets;
static_assert(std::size(kAdapterTargets) == 7, "one adapter per projection");

std::string layerPrefix(int64_t index) {
  return "model.layers." + std::to_string(index) + ".";
}

/// The checkpoint name of layer `index`'s projection `k` (kProjections).
std::string projectionName(int64_t index, size_t k) {
  return layerPrefix(index) + (k < 4 ? "self_attn." : "mlp.") + kProjections[k] +
         ".weight";
}

/// Projection `k`'s weight under its checkpoint name (a view of a fused
/// matrix for q, k, v, gate and up).
const torch::Tensor &projectionWeight(const LayerWeights &lw, size_t k) {
  const torch::Tensor *weights[] = {&lw.wq, &lw.wk, &lw.wv, &lw.wo,
                                    &lw.wGate, &lw.wUp, &lw.wDown};
  return *weights[k];
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

torch::Device PolicyModel::device() const { return w.embedding.device(); }

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
  model.w = loaded.take();
  for (LayerWeights &lw : model.w.layers)
    fuseLayer(model.cfg, lw);
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
  // Shapes and targets come in the same (checkpoint) order.
  auto shapes = checkpointTensorShapes(config);
  auto targets = namedWeights(config, model.w);
  for (size_t drawn = 1; drawn <= targets.size(); ++drawn) {
    const auto &[name, shape] = shapes[drawn - 1];
    torch::Tensor &t = *targets[drawn - 1].second;
    if (name.find("norm") != std::string::npos) {
      t = torch::ones(shape, opts);
    } else if (name.ends_with(".bias")) {
      t = torch::zeros(shape, opts); // as transformers initialises biases
    } else if (device.is_cuda()) {
      // Large shapes: draw on the device from a seeded device generator.
      auto cudaGen = at::globalContext().defaultGenerator(device).clone();
      cudaGen.set_current_seed(seed + drawn);
      t = torch::empty(shape, opts).normal_(0, 0.02, cudaGen);
    } else {
      t = torch::empty(shape, torch::kFloat32).normal_(0, 0.02, gen).to(opts);
    }
  }
  if (config.tieWordEmbeddings)
    model.w.lmHead = model.w.embedding;
  for (LayerWeights &lw : model.w.layers)
    fuseLayer(model.cfg, lw);
  model.initAdapters(seed);
  return model;
}

void PolicyModel::initAdapters(uint64_t seed) {
  torch::NoGradGuard noGrad;
  bool full = lora.rank == 0;
  for (auto &[name, t] : fusedParameters(cfg, w))
    t->set_requires_grad(full);
  adapters.assign(size_t(cfg.numHiddenLayers), Adapters{});
  if (full)
    return;
  std::set<std::string> targets(lora.targets.begin(), lora.targets.end());
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed ^ 0x4c6f5241ull);
  for (int64_t l = 0; l < cfg.numHiddenLayers; ++l)
    for (size_t k = 0; k < std::size(kProjections); ++k) {
      if (!targets.count(kProjections[k]))
        continue;
      const torch::Tensor &weight = projectionWeight(w.layers[size_t(l)], k);
      int64_t out = weight.size(0), in = weight.size(1);
      auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
      // A as nn.Linear initialises weights (Kaiming uniform, a = sqrt(5)),
      // B at zero: the adapted model starts as the base model.
      double bound = 1.0 / std::sqrt(double(in));
      LoraAdapter &adapter = adapters[size_t(l)][k];
      adapter.a = torch::empty({lora.rank, in}, f32)
                      .uniform_(-bound, bound, gen)
                      .to(weight.device())
                      .set_requires_grad(true);
      adapter.b = torch::zeros({out, lora.rank}, f32.device(weight.device()))
                      .set_requires_grad(true);
    }
  if (!lora.trainMaskRow)
    return;
  // The rows start as the base has them (the importer's initial row for a
  // base without a mask token).
  auto row = [&](const torch::Tensor &table) {
    return table.narrow(0, cfg.maskTokenId, 1).to(torch::kFloat32).clone().set_requires_grad(true);
  };
  maskEmbedding = row(w.embedding);
  if (!cfg.tieWordEmbeddings)
    maskHead = row(w.lmHead);
}

torch::Tensor PolicyModel::headTable() const {
  // A tied head is the embedding, with the embedding's trained row.
  const torch::Tensor &row = cfg.tieWordEmbeddings ? maskEmbedding : maskHead;
  if (!row.defined())
    return w.lmHead;
  torch::Tensor index =
      torch::full({1}, cfg.maskTokenId, torch::dtype(torch::kInt64).device(device()));
  return w.lmHead.index_copy(0, index, row.to(w.lmHead.scalar_type()));
}

torch::Tensor PolicyModel::layer(int64_t index, const torch::Tensor &x,
                                 const torch::Tensor &cos, const torch::Tensor &sin,
                                 const torch::Tensor &mask) const {
  const int64_t n = x.size(0), t = x.size(1);
  const int64_t hq = cfg.numAttentionHeads, hkv = cfg.numKeyValueHeads,
                d = cfg.headDim;
  Attend attend = [&](const torch::Tensor &q, const torch::Tensor &k,
                      const torch::Tensor &v) {
    torch::Tensor qt = q.transpose(1, 2); // [N, Hq, T, D]
    torch::Tensor kt = k.transpose(1, 2).to(q.scalar_type());
    torch::Tensor vt = v.transpose(1, 2).to(q.scalar_type());
    if (hkv != hq) {
      kt = kt.repeat_interleave(hq / hkv, 1);
      vt = vt.repeat_interleave(hq / hkv, 1);
    }
    return at::scaled_dot_product_attention(qt, kt, vt, mask)
        .transpose(1, 2)
        .reshape({n, t, hq * d});
  };
  LayerAdapters la;
  if (lora.rank > 0) {
    const Adapters &a = adapters[size_t(index)];
    auto of = [&](size_t k) { return a[k].a.defined() ? &a[k] : nullptr; };
    la = {of(0), of(1), of(2), of(3), of(4), of(5), of(6), lora.alpha / double(lora.rank)};
  }
  return decoderLayer(cfg, w.layers[size_t(index)], x, RopeTables{cos, sin}, attend,
                      lora.rank > 0 ? &la : nullptr);
}

std::vector<torch::Tensor> PolicyModel::layerParameters(int64_t index) {
  std::vector<torch::Tensor> params;
  const LayerWeights &lw = w.layers[size_t(index)];
  for (const torch::Tensor *t : {&lw.inputNorm, &lw.wqkv, &lw.bqkv, &lw.wo, &lw.bo,
                                 &lw.qNorm, &lw.kNorm, &lw.postNorm, &lw.wGateUp,
                                 &lw.wDown})
    if (t->defined() && t->requires_grad())
      params.push_back(*t);
  for (const LoraAdapter &a : adapters[size_t(index)])
    if (a.a.defined()) {
      params.push_back(a.a);
      params.push_back(a.b);
    }
  return params;
}

torch::Tensor PolicyModel::hidden(const torch::Tensor &ids,
                                  const torch::Tensor &positions,
                                  const torch::Tensor &allowed) {
  const torch::Device dev = device();
  const int64_t n = ids.size(0), t = ids.size(1);
  // The residual stream stays fp32 (autocast runs the products in bf16).
  torch::Tensor x = F::embedding(ids.to(dev), w.embedding).to(torch::kFloat32);
  if (maskEmbedding.defined()) // the trained row, without copying the table
    x = torch::where((ids.to(dev) == cfg.maskTokenId).unsqueeze(-1), maskEmbedding, x);
  // RoPE at each token's own position (the layouts repeat positions),
  // [N, T, 1, D].
  RopeTables rope = ropeTables(cfg, positions.to(dev), x.scalar_type());
  torch::Tensor mask = allowed.to(dev).view({n, 1, t, t});

  const bool recompute = checkpointing && torch::GradMode::is_enabled();
  for (int64_t l = 0; l < cfg.numHiddenLayers; ++l) {
    if (!recompute) {
      x = layer(l, x, rope.cos, rope.sin, mask);
      continue;
    }
    std::vector<torch::Tensor> params = layerParameters(l);
    x = LayerCheckpoint::apply(x, at::TensorList(params), reinterpret_cast<int64_t>(this), l,
                               rope.cos, rope.sin, mask);
  }
  return rmsNorm(x, w.finalNorm, cfg.rmsNormEps);
}

torch::Tensor PolicyModel::logits(const torch::Tensor &hidden) {
  return headLogits(hidden, headTable()).to(torch::kFloat32);
}

std::vector<std::pair<std::string, torch::Tensor>> PolicyModel::trainable() {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  if (lora.rank == 0) {
    for (auto &[name, t] : fusedParameters(cfg, w))
      out.emplace_back(name, *t);
    return out;
  }
  for (auto &[name, t] : adapterTensors())
    out.emplace_back(name, t);
  return out;
}

Adapter PolicyModel::currentAdapter() const {
  Adapter adapter;
  adapter.settings = adapterSettings();
  for (int64_t l = 0; l < cfg.numHiddenLayers && lora.rank > 0; ++l)
    for (size_t k = 0; k < std::size(kProjections); ++k)
      if (const LoraAdapter &a = adapters[size_t(l)][k]; a.a.defined())
        adapter.lora[projectionName(l, k)] = {a.a.detach(), a.b.detach()};
  if (maskEmbedding.defined())
    adapter.embedding = {{cfg.maskTokenId}, maskEmbedding.detach()};
  if (maskHead.defined())
    adapter.head = {{cfg.maskTokenId}, maskHead.detach()};
  return adapter;
}

std::map<std::string, torch::Tensor> PolicyModel::mergedWeights() const {
  torch::NoGradGuard noGrad;
  // The same tensors; the runtime's applyAdapter replaces what it changes.
  TransformerWeights merged = w;
  if (lora.rank > 0)
    applyAdapter(currentAdapter(), cfg, merged);
  std::map<std::string, torch::Tensor> named;
  for (auto &[name, t] : namedWeights(cfg, merged))
    named[name] = t->detach();
  return named;
}

std::vector<std::pair<std::string, torch::Tensor>>
PolicyModel::checkpointTensors(torch::ScalarType dtype) const {
  std::map<std::string, torch::Tensor> merged = mergedWeights();
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto &[name, shape] : checkpointTensorShapes(cfg))
    out.emplace_back(name, merged.at(name).to(dtype).contiguous());
  return out;
}

std::vector<std::pair<std::string, torch::Tensor>>
PolicyModel::adapterTensors() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (int64_t l = 0; l < cfg.numHiddenLayers && lora.rank > 0; ++l)
    for (size_t k = 0; k < std::size(kProjections); ++k)
      if (const LoraAdapter &a = adapters[size_t(l)][k]; a.a.defined()) {
        // The tensors themselves (trainable() hands them to the optimizer,
        // which reads their gradients); checkpoint writers copy them.
        out.emplace_back(adapterFactorName(projectionName(l, k), 'A'), a.a);
        out.emplace_back(adapterFactorName(projectionName(l, k), 'B'), a.b);
      }
  if (maskEmbedding.defined())
    out.emplace_back(adapterRowsName(false), maskEmbedding);
  if (maskHead.defined())
    out.emplace_back(adapterRowsName(true), maskHead);
  return out;
}

AdapterSettings PolicyModel::adapterSettings() const {
  AdapterSettings s;
  s.rank = lora.rank;
  s.alpha = lora.alpha;
  for (const char *target : kProjections) // in the layers' order
    if (std::count(lora.targets.begin(), lora.targets.end(), target))
      s.targets.push_back(target);
  if (maskEmbedding.defined())
    s.embeddingRows = {cfg.maskTokenId};
  if (maskHead.defined())
    s.headRows = {cfg.maskTokenId};
  return s;
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
  std::map<std::string, torch::Tensor> merged = mergedWeights();
  TransformerWeights out;
  for (auto &[name, target] : namedWeights(cfg, out))
    *target = merged.at(name).to(dtype).contiguous();
  if (cfg.tieWordEmbeddings)
    out.lmHead = out.embedding;
  return out;
}

} // namespace dice
