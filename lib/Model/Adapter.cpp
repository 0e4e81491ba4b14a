//===- Adapter.cpp - LoRA adapters in PEFT's folder format ----------------===//

#include "dice/Model/Adapter.h"

#include "dice/Model/Safetensors.h"
#include "dice/Model/Transformer.h"
#include "dice/Support/File.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

namespace dice {
namespace {

using nlohmann::json;

/// adapter_config.json keys read below.
const std::set<std::string> kReadKeys = {
    "peft_type", "r", "lora_alpha", "use_rslora", "target_modules",
    "trainable_token_indices", "bias"};

/// Keys that name where the adapter came from or how it was trained, not
/// what the adapted model computes.
const std::set<std::string> kInformationalKeys = {
    "peft_version", "base_model_name_or_path", "revision", "task_type",
    "auto_mapping", "inference_mode", "init_lora_weights", "lora_dropout",
    "megatron_core", "qalora_group_size", "layers_pattern"};

/// Null, false or empty: what a key left at PEFT's default holds.
bool neutral(const json &value) {
  return value.is_null() || (value.is_boolean() && !value.get<bool>()) ||
         ((value.is_object() || value.is_array()) && value.empty());
}

Error keyError(const std::string &file, const std::string &key,
               const std::string &what) {
  return Error(file, 0, 0, key, what);
}

Result<std::vector<int64_t>> readRows(const json &value, const std::string &file,
                                      const std::string &key, int64_t vocab) {
  if (!value.is_array())
    return keyError(file, key, "expected a list of token ids");
  std::vector<int64_t> ids;
  for (const json &id : value) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= vocab)
      return keyError(file, key,
                      "token ids must be integers in [0, " + std::to_string(vocab) + ")");
    ids.push_back(id.get<int64_t>());
  }
  if (std::set<int64_t>(ids.begin(), ids.end()).size() != ids.size())
    return keyError(file, key, "lists a token id twice");
  return ids;
}

Result<AdapterSettings> readSettings(const std::string &file, const ModelConfig &config) {
  Result<std::string> text = readFile(file);
  if (!text)
    return text.error();
  json j = json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return Error(file, "is not a JSON object");
  for (auto &[key, value] : j.items())
    if (!kReadKeys.count(key) && !kInformationalKeys.count(key) && !neutral(value))
      return keyError(file, key,
                      "changes the adapted model in a way the runtime does not "
                      "compute (only LoRA on q/k/v/o/gate/up/down and replaced "
                      "token rows are read)");
  AdapterSettings s;
  if (!j.contains("peft_type") || j["peft_type"] != "LORA")
    return keyError(file, "peft_type", "must be \"LORA\"");
  if (!j.contains("r") || !j["r"].is_number_integer() || j["r"].get<int64_t>() < 1)
    return keyError(file, "r", "must be a positive integer");
  s.rank = j["r"].get<int64_t>();
  if (j.contains("lora_alpha")) {
    if (!j["lora_alpha"].is_number())
      return keyError(file, "lora_alpha", "expected a number");
    s.alpha = j["lora_alpha"].get<double>();
  } else {
    s.alpha = 8; // PEFT's default
  }
  if (j.contains("use_rslora") && !j["use_rslora"].is_null()) {
    if (!j["use_rslora"].is_boolean())
      return keyError(file, "use_rslora", "expected true or false");
    s.rslora = j["use_rslora"].get<bool>();
  }
  if (j.contains("bias") && j["bias"] != "none")
    return keyError(file, "bias", "only \"none\" is read (biases are not adapted)");
  const json &targets = j.value("target_modules", json());
  if (!targets.is_array() || targets.empty())
    return keyError(file, "target_modules",
                    "expected a list of projections (a regular expression is not read)");
  for (const json &t : targets) {
    std::string name = t.is_string() ? t.get<std::string>() : "";
    if (std::find(std::begin(kAdapterTargets), std::end(kAdapterTargets), name) ==
        std::end(kAdapterTargets))
      return keyError(file, "target_modules",
                      "'" + t.dump() + "' is not one of q_proj, k_proj, v_proj, "
                      "o_proj, gate_proj, up_proj, down_proj");
    s.targets.push_back(name);
  }
  const json &rows = j.value("trainable_token_indices", json());
  const std::string rowsKey = "trainable_token_indices";
  if (rows.is_array()) {
    Result<std::vector<int64_t>> ids = readRows(rows, file, rowsKey, config.vocabSize);
    if (!ids)
      return ids.error();
    s.embeddingRows = ids.take();
  } else if (rows.is_object()) {
    for (auto &[layer, ids] : rows.items()) {
      bool head = layer == "lm_head";
      if (!head && layer != "embed_tokens")
        return keyError(file, rowsKey + "." + layer,
                        "only embed_tokens and lm_head have token rows");
      if (head && config.tieWordEmbeddings)
        return keyError(file, rowsKey + ".lm_head",
                        "the head is the embedding (tie_word_embeddings): list "
                        "the rows under embed_tokens");
      Result<std::vector<int64_t>> read =
          readRows(ids, file, rowsKey + "." + layer, config.vocabSize);
      if (!read)
        return read.error();
      (head ? s.headRows : s.embeddingRows) = read.take();
    }
  } else if (!rows.is_null()) {
    return keyError(file, rowsKey, "expected a list of token ids or an object of lists");
  }
  return s;
}

/// Takes tensor `name` of `shape` out of `tensors`.
Result<torch::Tensor> take(std::map<std::string, torch::Tensor> &tensors,
                           const std::string &file, const std::string &name,
                           const std::vector<int64_t> &shape) {
  auto it = tensors.find(name);
  if (it == tensors.end())
    return keyError(file, name, "missing");
  if (it->second.sizes() != at::IntArrayRef(shape)) {
    std::ostringstream got, want;
    got << it->second.sizes();
    want << at::IntArrayRef(shape);
    return keyError(file, name, "has shape " + got.str() + ", the base implies " + want.str());
  }
  torch::Tensor t = it->second.to(torch::kFloat32);
  tensors.erase(it);
  return t;
}

} // namespace

double AdapterSettings::scale() const {
  return rslora ? alpha / std::sqrt(double(rank)) : alpha / double(rank);
}

std::string adapterFactorName(const std::string &weightName, char which) {
  std::string module = weightName.substr(0, weightName.size() - std::string(".weight").size());
  return "base_model.model." + module + ".lora_" + which + ".weight";
}

std::string adapterRowsName(bool head) {
  return head ? "base_model.model.lm_head.token_adapter.trainable_tokens_delta"
              : "base_model.model.model.embed_tokens.token_adapter.trainable_tokens_delta";
}

Result<Adapter> readAdapter(const std::string &dir, const ModelConfig &config) {
  const std::string configFile = dir + "/" + kAdapterConfigFile;
  const std::string weightsFile = dir + "/" + kAdapterWeightsFile;
  Result<AdapterSettings> settings = readSettings(configFile, config);
  if (!settings)
    return settings.error();
  Result<std::map<std::string, torch::Tensor>> tensors = readTensorFile(weightsFile);
  if (!tensors)
    return tensors.error();
  Adapter adapter;
  adapter.settings = settings.take();
  const int64_t r = adapter.settings.rank;
  std::set<std::string> targets(adapter.settings.targets.begin(),
                                adapter.settings.targets.end());
  for (const auto &[name, shape] : checkpointTensorShapes(config)) {
    if (!name.starts_with("model.layers.") || !name.ends_with(".weight"))
      continue;
    std::string module = name.substr(0, name.size() - std::string(".weight").size());
    if (!targets.count(module.substr(module.rfind('.') + 1)))
      continue;
    Result<torch::Tensor> a = take(*tensors, weightsFile, adapterFactorName(name, 'A'),
                                   {r, shape[1]});
    if (!a)
      return a.error();
    Result<torch::Tensor> b = take(*tensors, weightsFile, adapterFactorName(name, 'B'),
                                   {shape[0], r});
    if (!b)
      return b.error();
    adapter.lora[name] = {a.take(), b.take()};
  }
  for (bool head : {false, true}) {
    const std::vector<int64_t> &ids =
        head ? adapter.settings.headRows : adapter.settings.embeddingRows;
    if (ids.empty())
      continue;
    Result<torch::Tensor> values =
        take(*tensors, weightsFile, adapterRowsName(head),
             {int64_t(ids.size()), config.hiddenSize});
    if (!values)
      return values.error();
    (head ? adapter.head : adapter.embedding) = TokenRows{ids, values.take()};
  }
  if (!tensors->empty())
    return keyError(weightsFile, tensors->begin()->first,
                    "is not a tensor of this adapter over this base (extra tensor)");
  return adapter;
}

void applyAdapter(const Adapter &adapter, const ModelConfig &config,
                  TransformerWeights &weights) {
  torch::NoGradGuard noGrad;
  const double scale = adapter.settings.scale();
  for (auto &[name, target] : namedWeights(config, weights)) {
    auto it = adapter.lora.find(name);
    if (it == adapter.lora.end())
      continue;
    const auto &[a, b] = it->second;
    torch::Tensor &w = *target;
    torch::Tensor update = torch::matmul(b.to(w.device()), a.to(w.device()));
    w = (w.to(torch::kFloat32) + scale * update).to(w.scalar_type());
  }
  // Out of place, like the products above: tensors shared with another
  // owner (the trainer's frozen base) stay as they are.
  auto copyRows = [](torch::Tensor &table, const TokenRows &rows) {
    if (rows.ids.empty())
      return;
    torch::Tensor index = torch::tensor(rows.ids, torch::kInt64).to(table.device());
    table = table.index_copy(0, index, rows.values.to(table.device(), table.scalar_type()));
  };
  copyRows(weights.embedding, adapter.embedding);
  if (config.tieWordEmbeddings)
    weights.lmHead = weights.embedding;
  else
    copyRows(weights.lmHead, adapter.head);
}

Status writeAdapter(const std::string &dir, const AdapterSettings &settings,
                    const std::string &baseDir,
                    const std::vector<std::pair<std::string, torch::Tensor>> &tensors) {
  json rows = nullptr;
  if (!settings.headRows.empty())
    rows = {{"embed_tokens", settings.embeddingRows}, {"lm_head", settings.headRows}};
  else if (!settings.embeddingRows.empty())
    rows = settings.embeddingRows;
  json config = {{"peft_type", "LORA"},
                 {"task_type", "CAUSAL_LM"},
                 {"base_model_name_or_path", baseDir},
                 {"r", settings.rank},
                 {"lora_alpha", settings.alpha},
                 {"use_rslora", settings.rslora},
                 {"target_modules", settings.targets},
                 {"trainable_token_indices", rows},
                 {"bias", "none"},
                 {"lora_dropout", 0.0},
                 {"fan_in_fan_out", false},
                 {"use_dora", false},
                 {"inference_mode", true}};
  const std::string configFile = dir + "/" + kAdapterConfigFile;
  std::ofstream out(configFile, std::ios::binary);
  out << config.dump(2) << "\n";
  out.close();
  if (!out)
    return Error(configFile, "cannot be written");
  std::vector<torch::Tensor> hosts;
  std::vector<TensorToWrite> writes;
  for (const auto &[name, t] : tensors) {
    hosts.push_back(t.detach().to(torch::kCPU, torch::kFloat32).contiguous());
    const torch::Tensor &h = hosts.back();
    writes.push_back({name, ModelDType::Float32,
                      std::vector<int64_t>(h.sizes().begin(), h.sizes().end()),
                      h.data_ptr(), size_t(h.nbytes())});
  }
  return writeSafetensors(dir + "/" + kAdapterWeightsFile, writes);
}

} // namespace dice
