//===- ModelConfig.cpp - decoder checkpoint configuration ----------------===//

#include "dice/Model/ModelConfig.h"

#include <nlohmann/json.hpp>

#include "dice/Support/File.h"

#include <filesystem>

namespace dice {
namespace {

using nlohmann::json;

Error keyError(std::string_view source, std::string_view key,
               std::string_view what) {
  return Error(std::string(source), 0, 0, std::string(key), std::string(what));
}

/// Reads a positive integer key; `required` keys must be present.
Status readInt(const json &j, std::string_view source, const char *key,
               int64_t &out, bool required, int64_t min = 1) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null())
    return required ? Status(keyError(source, key, "missing")) : Status();
  if (!it->is_number_integer())
    return keyError(source, key, "expected an integer");
  int64_t value = it->get<int64_t>();
  if (value < min)
    return keyError(source, key,
                    "must be at least " + std::to_string(min) + ", got " +
                        std::to_string(value));
  out = value;
  return {};
}

Status readFloat(const json &j, std::string_view source, const char *key,
                 double &out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null())
    return {};
  if (!it->is_number())
    return keyError(source, key, "expected a number");
  out = it->get<double>();
  if (!(out > 0))
    return keyError(source, key, "must be positive");
  return {};
}

/// `eos_token_id` is an integer or a list of integers.
Status readIds(const json &j, std::string_view source, const char *key,
               std::vector<int64_t> &out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null())
    return {};
  std::vector<int64_t> ids;
  if (it->is_number_integer()) {
    ids.push_back(it->get<int64_t>());
  } else if (it->is_array()) {
    for (const json &id : *it) {
      if (!id.is_number_integer())
        return keyError(source, key, "expected integers");
      ids.push_back(id.get<int64_t>());
    }
  } else {
    return keyError(source, key, "expected an integer or a list of integers");
  }
  out = std::move(ids);
  return {};
}

/// generation_config.json's decoding keys, checked against the ranges
/// dice.toml's [sampling] accepts.
Status readGenerationDefaults(const json &j, std::string_view source,
                              GenerationDefaults &out) {
  auto field = [&](const char *key) -> const json * {
    auto it = j.find(key);
    return it == j.end() || it->is_null() ? nullptr : &*it;
  };
  if (const json *v = field("do_sample")) {
    if (!v->is_boolean())
      return keyError(source, "do_sample", "expected true or false");
    out.doSample = v->get<bool>();
  }
  if (const json *v = field("temperature")) {
    if (!v->is_number() || v->get<double>() < 0 || v->get<double>() > 100)
      return keyError(source, "temperature", "expected a number in [0, 100]");
    out.temperature = v->get<double>();
  }
  if (const json *v = field("top_k")) {
    if (!v->is_number_integer() || v->get<int64_t>() < 0)
      return keyError(source, "top_k", "expected an integer >= 0");
    out.topK = v->get<int64_t>();
  }
  if (const json *v = field("top_p")) {
    if (!v->is_number() || !(v->get<double>() > 0) || v->get<double>() > 1)
      return keyError(source, "top_p", "expected a number in (0, 1]");
    out.topP = v->get<double>();
  }
  if (const json *v = field("max_new_tokens")) {
    if (!v->is_number_integer() || v->get<int64_t>() < 1 || v->get<int64_t>() > (1 << 20))
      return keyError(source, "max_new_tokens", "expected an integer in [1, 1048576]");
    out.maxNewTokens = v->get<int64_t>();
  }
  return {};
}

Result<json> parseJson(std::string_view text, std::string_view source) {
  try {
    json j = json::parse(text);
    if (!j.is_object())
      return Error(std::string(source), "expected a JSON object");
    return j;
  } catch (const json::parse_error &e) {
    return Error(std::string(source),
                 "invalid JSON at byte " + std::to_string(e.byte));
  } catch (const json::exception &e) { // e.g. a number out of range
    return Error(std::string(source), "invalid JSON: " + std::string(e.what()));
  }
}

/// `key` as a boolean, `fallback` where absent or null.
Result<bool> readBool(const json &j, std::string_view source, const char *key,
                      bool fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null())
    return fallback;
  if (!it->is_boolean())
    return keyError(source, key, "expected a boolean");
  return it->get<bool>();
}

/// The decoder family of `model_type` and the features it implies, and the
/// keys of features the decoder does not compute, which must be off.
Status readFamily(const json &j, std::string_view source, ModelConfig &c) {
  if (auto it = j.find("model_type"); it != j.end() && !it->is_null()) {
    if (!it->is_string())
      return keyError(source, "model_type", "expected a string");
    c.modelType = it->get<std::string>();
  }
  Result<bool> attentionBias = readBool(j, source, "attention_bias", false);
  if (!attentionBias)
    return attentionBias.error();
  if (c.modelType == "sdar" || c.modelType == "qwen3") {
    // Qwen3's attention_bias puts biases on all four projections.
    c.qkNorm = true;
    c.qkvBias = c.outputBias = *attentionBias;
  } else if (c.modelType == "qwen2") {
    c.qkNorm = false;
    c.qkvBias = true;
    c.outputBias = false;
  } else if (c.modelType == "llama") {
    c.qkNorm = false;
    c.qkvBias = c.outputBias = *attentionBias;
  } else {
    return keyError(source, "model_type",
                    "'" + c.modelType +
                        "' is not a decoder the runtime computes (expected "
                        "sdar, qwen3, qwen2 or llama)");
  }
  if (auto it = j.find("hidden_act"); it != j.end() && !it->is_null() &&
                                      *it != json("silu"))
    return keyError(source, "hidden_act", "only silu (SwiGLU) is computed");
  if (auto it = j.find("rope_scaling"); it != j.end() && !it->is_null())
    return keyError(source, "rope_scaling",
                    "rotary scaling is not computed (expected null)");
  for (const char *key : {"use_sliding_window", "mlp_bias"}) {
    Result<bool> on = readBool(j, source, key, false);
    if (!on)
      return on.error();
    if (*on)
      return keyError(source, key, "is not computed (expected false)");
  }
  return {};
}

} // namespace

Result<ModelDType> parseModelDType(std::string_view name) {
  if (name == "float32" || name == "fp32" || name == "float")
    return ModelDType::Float32;
  if (name == "float16" || name == "fp16" || name == "half")
    return ModelDType::Float16;
  if (name == "bfloat16" || name == "bf16")
    return ModelDType::BFloat16;
  return Error("unknown dtype '" + std::string(name) +
               "' (expected float32, float16 or bfloat16)");
}

Result<ModelDType> computeDType(std::string_view requested, bool onCpu,
                                ModelDType stored) {
  if (!requested.empty() && requested != "auto")
    return parseModelDType(requested);
  // Checkpoints are stored in bfloat16, which CPUs without native bfloat16
  // arithmetic emulate: a linear layer of the shipped model takes about 6x
  // as long on such a CPU in bfloat16 as in float32.
  return onCpu ? ModelDType::Float32 : stored;
}

std::string_view toString(ModelDType dtype) {
  switch (dtype) {
  case ModelDType::Float32:
    return "float32";
  case ModelDType::Float16:
    return "float16";
  case ModelDType::BFloat16:
    return "bfloat16";
  }
  return "?";
}

Result<ModelConfig> parseModelConfig(std::string_view text,
                                     std::string_view source) {
  Result<json> parsed = parseJson(text, source);
  if (!parsed)
    return parsed.error();
  const json &j = *parsed;

  ModelConfig c;
  for (const Status &status :
       {readFamily(j, source, c),
        readInt(j, source, "hidden_size", c.hiddenSize, true),
        readInt(j, source, "intermediate_size", c.intermediateSize, true),
        readInt(j, source, "num_hidden_layers", c.numHiddenLayers, true),
        readInt(j, source, "num_attention_heads", c.numAttentionHeads, true),
        readInt(j, source, "vocab_size", c.vocabSize, true),
        readInt(j, source, "head_dim", c.headDim, false),
        readInt(j, source, "block_size", c.blockSize, false),
        readInt(j, source, "mask_token_id", c.maskTokenId, false, 0),
        readFloat(j, source, "rope_theta", c.ropeTheta),
        readFloat(j, source, "rms_norm_eps", c.rmsNormEps),
        readIds(j, source, "eos_token_id", c.stopTokenIds)})
    if (!status)
      return status.error();

  // Qwen3 configs may leave these out: defaults as in transformers.
  c.numKeyValueHeads = c.numAttentionHeads;
  if (Status status =
          readInt(j, source, "num_key_value_heads", c.numKeyValueHeads, false);
      !status)
    return status.error();
  if (c.headDim == 0) {
    if (c.hiddenSize % c.numAttentionHeads != 0)
      return keyError(source, "head_dim",
                      "missing, and hidden_size is not a multiple of "
                      "num_attention_heads");
    c.headDim = c.hiddenSize / c.numAttentionHeads;
  }
  if (c.headDim % 2 != 0)
    return keyError(source, "head_dim", "must be even (rotary embedding)");
  if (c.numAttentionHeads % c.numKeyValueHeads != 0)
    return keyError(source, "num_key_value_heads",
                    "must divide num_attention_heads");
  if (c.maskTokenId >= c.vocabSize)
    return keyError(source, "mask_token_id", "outside the vocabulary");

  if (auto it = j.find("tie_word_embeddings"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean())
      return keyError(source, "tie_word_embeddings", "expected a boolean");
    c.tieWordEmbeddings = it->get<bool>();
  }
  // transformers 5 writes `dtype`, older versions `torch_dtype`.
  for (const char *key : {"torch_dtype", "dtype"}) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null())
      continue;
    if (!it->is_string())
      return keyError(source, key, "expected a string");
    Result<ModelDType> dtype = parseModelDType(it->get<std::string>());
    if (!dtype)
      return keyError(source, key, dtype.error().message);
    c.torchDtype = *dtype;
    break;
  }
  return c;
}

SamplingConfig applyGenerationDefaults(SamplingConfig sampling,
                                       const GenerationDefaults &generation) {
  if (!sampling.userSet.maxTokens && generation.maxNewTokens)
    sampling.maxTokens = *generation.maxNewTokens;
  if (!generation.doSample.value_or(false))
    return sampling;
  if (!sampling.userSet.temperature)
    sampling.temperature = generation.temperature.value_or(1.0);
  if (!sampling.userSet.topK)
    sampling.topK = generation.topK.value_or(50);
  if (!sampling.userSet.topP)
    sampling.topP = generation.topP.value_or(1.0);
  return sampling;
}

Result<ModelConfig> loadModelConfig(const std::string &dir) {
  std::string path = dir + "/config.json";
  Result<std::string> text = readFile(path);
  if (!text)
    return text.error();
  Result<ModelConfig> config = parseModelConfig(*text, path);
  if (!config)
    return config;

  // generation_config.json says where generation stops; it wins over
  // config.json, whose eos_token_id is often only <|endoftext|>.
  std::string genPath = dir + "/generation_config.json";
  std::error_code ec;
  if (std::filesystem::exists(genPath, ec)) {
    Result<std::string> genText = readFile(genPath);
    if (!genText)
      return genText.error();
    Result<json> gen = parseJson(*genText, genPath);
    if (!gen)
      return gen.error();
    if (Status status =
            readIds(*gen, genPath, "eos_token_id", config->stopTokenIds);
        !status)
      return status.error();
    if (Status status =
            readGenerationDefaults(*gen, genPath, config->generation);
        !status)
      return status.error();
  }
  if (config->stopTokenIds.empty())
    config->stopTokenIds = {151645, 151643}; // <|im_end|>, <|endoftext|>
  return config;
}

} // namespace dice
