//===- Checkpoint.cpp - checkpoint tensor names and weight loading --------===//
//
// The one place that knows the checkpoint's tensor names (Hugging Face
// layout of SDAR/Qwen3, Qwen2 and Llama) and which weight each one fills.
//
//===----------------------------------------------------------------------===//

#include "dice/Model/Adapter.h"
#include "dice/Model/Safetensors.h"
#include "dice/Model/Transformer.h"

#include <set>
#include <sstream>

namespace dice {
namespace {

/// A checkpoint tensor: its name, the shape the config implies and the
/// weight it fills; for a piece of a fused matrix (fuseLayer), that matrix
/// and its name.
struct WeightSlot {
  std::string name;
  std::vector<int64_t> shape;
  torch::Tensor *target;
  std::string fusedName = {};
  torch::Tensor *fused = nullptr;
};

std::vector<WeightSlot> weightSlots(const ModelConfig &c, TransformerWeights &w) {
  const int64_t h = c.hiddenSize, d = c.headDim, i = c.intermediateSize;
  const int64_t q = c.numAttentionHeads * d, kv = c.numKeyValueHeads * d;
  std::vector<WeightSlot> slots = {
      {"model.embed_tokens.weight", {c.vocabSize, h}, &w.embedding},
      {"model.norm.weight", {h}, &w.finalNorm},
  };
  if (!c.tieWordEmbeddings)
    slots.push_back({"lm_head.weight", {c.vocabSize, h}, &w.lmHead});
  w.layers.resize(size_t(c.numHiddenLayers));
  for (int64_t l = 0; l < c.numHiddenLayers; ++l) {
    LayerWeights &lw = w.layers[size_t(l)];
    std::string p = "model.layers." + std::to_string(l) + ".";
    const std::string qkv = p + "self_attn.qkv_proj.weight",
                      qkvBias = p + "self_attn.qkv_proj.bias",
                      gateUp = p + "mlp.gate_up_proj.weight";
    slots.insert(slots.end(),
                 {{p + "input_layernorm.weight", {h}, &lw.inputNorm},
                  {p + "self_attn.q_proj.weight", {q, h}, &lw.wq, qkv, &lw.wqkv},
                  {p + "self_attn.k_proj.weight", {kv, h}, &lw.wk, qkv, &lw.wqkv},
                  {p + "self_attn.v_proj.weight", {kv, h}, &lw.wv, qkv, &lw.wqkv}});
    if (c.qkvBias)
      slots.insert(slots.end(),
                   {{p + "self_attn.q_proj.bias", {q}, &lw.bq, qkvBias, &lw.bqkv},
                    {p + "self_attn.k_proj.bias", {kv}, &lw.bk, qkvBias, &lw.bqkv},
                    {p + "self_attn.v_proj.bias", {kv}, &lw.bv, qkvBias, &lw.bqkv}});
    slots.push_back({p + "self_attn.o_proj.weight", {h, q}, &lw.wo});
    if (c.outputBias)
      slots.push_back({p + "self_attn.o_proj.bias", {h}, &lw.bo});
    if (c.qkNorm)
      slots.insert(slots.end(), {{p + "self_attn.q_norm.weight", {d}, &lw.qNorm},
                                 {p + "self_attn.k_norm.weight", {d}, &lw.kNorm}});
    slots.insert(slots.end(),
                 {{p + "post_attention_layernorm.weight", {h}, &lw.postNorm},
                  {p + "mlp.gate_proj.weight", {i, h}, &lw.wGate, gateUp, &lw.wGateUp},
                  {p + "mlp.up_proj.weight", {i, h}, &lw.wUp, gateUp, &lw.wGateUp},
                  {p + "mlp.down_proj.weight", {h, i}, &lw.wDown}});
  }
  return slots;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::ostringstream out;
  out << "[";
  for (size_t k = 0; k < shape.size(); ++k)
    out << (k ? ", " : "") << shape[k];
  out << "]";
  return out.str();
}

Error tensorError(const std::string &file, const std::string &tensor,
                  const std::string &what) {
  return Error(file, 0, 0, "tensor '" + tensor + "'", what);
}

} // namespace

std::vector<std::pair<std::string, std::vector<int64_t>>>
checkpointTensorShapes(const ModelConfig &config) {
  TransformerWeights unused;
  std::vector<std::pair<std::string, std::vector<int64_t>>> shapes;
  for (WeightSlot &slot : weightSlots(config, unused))
    shapes.emplace_back(std::move(slot.name), std::move(slot.shape));
  return shapes;
}

std::vector<std::pair<std::string, torch::Tensor *>>
namedWeights(const ModelConfig &config, TransformerWeights &weights) {
  std::vector<std::pair<std::string, torch::Tensor *>> named;
  for (WeightSlot &slot : weightSlots(config, weights))
    named.emplace_back(std::move(slot.name), slot.target);
  return named;
}

std::vector<std::pair<std::string, torch::Tensor *>>
fusedParameters(const ModelConfig &config, TransformerWeights &weights) {
  std::vector<std::pair<std::string, torch::Tensor *>> named;
  for (WeightSlot &slot : weightSlots(config, weights)) {
    if (!slot.fused)
      named.emplace_back(std::move(slot.name), slot.target);
    else if (named.empty() || named.back().second != slot.fused) // its first piece
      named.emplace_back(std::move(slot.fusedName), slot.fused);
  }
  return named;
}

torch::ScalarType toScalarType(ModelDType dtype) {
  switch (dtype) {
  case ModelDType::Float32:
    return torch::kFloat32;
  case ModelDType::Float16:
    return torch::kFloat16;
  case ModelDType::BFloat16:
    return torch::kBFloat16;
  }
  return torch::kFloat32;
}

Result<TransformerWeights> loadTransformerWeights(const std::string &dir,
                                                  const ModelConfig &config,
                                                  torch::Device device,
                                                  torch::ScalarType dtype) {
  Result<SafetensorsCheckpoint> checkpoint = SafetensorsCheckpoint::open(dir);
  if (!checkpoint)
    return checkpoint.error();
  const auto &tensors = checkpoint->tensors();

  TransformerWeights weights;
  std::vector<WeightSlot> slots = weightSlots(config, weights);

  // Check everything before copying anything: a bad checkpoint fails fast.
  std::set<std::string> expected;
  for (const WeightSlot &slot : slots) {
    expected.insert(slot.name);
    auto it = tensors.find(slot.name);
    if (it == tensors.end())
      return tensorError(checkpoint->description(), slot.name, "missing");
    if (it->second.entry->shape != slot.shape)
      return tensorError(it->second.file->path(), slot.name,
                         "has shape " + shapeString(it->second.entry->shape) +
                             ", config.json implies " + shapeString(slot.shape));
  }
  for (const auto &[name, located] : tensors)
    if (!expected.count(name))
      return tensorError(located.file->path(), name,
                         "is not a tensor of this model (extra tensor)");

  for (const WeightSlot &slot : slots) {
    const SafetensorsCheckpoint::Located &located = tensors.at(slot.name);
    const TensorEntry &entry = *located.entry;
    try {
      // A view of the mapping, then exactly one copy to the target device
      // and dtype; the mapping is unmapped when `checkpoint` goes out of
      // scope.
      torch::Tensor mapped = torch::from_blob(
          const_cast<std::byte *>(entry.data), entry.shape,
          torch::TensorOptions().dtype(toScalarType(entry.dtype)));
      *slot.target = mapped.to(device, dtype, /*non_blocking=*/false,
                               /*copy=*/true);
    } catch (const std::exception &e) { // e.g. out of device memory
      return tensorError(located.file->path(), slot.name,
                         std::string("cannot copy to the device: ") + e.what());
    }
  }
  if (config.tieWordEmbeddings)
    weights.lmHead = weights.embedding;
  return weights;
}

Result<std::map<std::string, torch::Tensor>>
readTensorFile(const std::string &path) {
  Result<std::unique_ptr<SafetensorsFile>> file = SafetensorsFile::open(path);
  if (!file)
    return file.error();
  std::map<std::string, torch::Tensor> out;
  for (const TensorEntry &e : (*file)->tensors())
    out[e.name] = torch::from_blob(const_cast<std::byte *>(e.data), e.shape,
                                   torch::TensorOptions().dtype(toScalarType(e.dtype)))
                      .clone();
  return out;
}

Result<std::unique_ptr<Transformer>>
Transformer::load(const std::string &dir, torch::Device device,
                  torch::ScalarType dtype, const std::string &adapterDir) {
  Result<ModelConfig> config = loadModelConfig(dir);
  if (!config)
    return config.error();
  try {
    // The adapter is read (and checked against the base's shapes) before
    // the base's weights take the device's memory.
    Result<Adapter> adapter = Adapter{};
    if (!adapterDir.empty())
      adapter = readAdapter(adapterDir, *config);
    if (!adapter)
      return adapter.error();
    Result<TransformerWeights> weights =
        loadTransformerWeights(dir, *config, device, dtype);
    if (!weights)
      return weights.error();
    if (!adapterDir.empty())
      applyAdapter(*adapter, *config, *weights);
    return std::make_unique<Transformer>(*config, std::move(*weights));
  } catch (const std::exception &e) { // e.g. out of memory while merging
    return Error(adapterDir.empty() ? dir : adapterDir, e.what());
  }
}

} // namespace dice
