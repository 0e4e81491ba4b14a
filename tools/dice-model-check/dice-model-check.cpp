//===- dice-model-check.cpp - run the model runtime on given token ids ----===//
//
// Loads a checkpoint and either writes the logits of a prefill followed by
// cached block steps (what the numerics tests compare with transformers):
//
//   dice-model-check --model DIR --ids 1,2,3,... --out logits.safetensors
//       [--prefill P] [--block B] [--batch N] [--dtype float32] [--device cpu]
//
// or decodes candidates with the block-diffusion sampler and prints JSON:
//
//   dice-model-check --model DIR --ids 1,2,3 --generate N [--steps 4]
//       [--remasking static|dynamic|sequential] [--threshold 0.9]
//       [--temperature 1] [--top-k 1] [--top-p 1] [--max-tokens 64] [--seed 0]
//
// With --prompt TEXT instead of --ids, candidates come from the whole
// InfillEngine (tokenizer + model + sampler) and carry their text.
//
//===----------------------------------------------------------------------===//

#include "dice/Model/BlockDiffusionSampler.h"
#include "dice/Model/DiceInfillEngine.h"
#include "dice/Model/Safetensors.h"
#include "dice/Model/Transformer.h"

#include <nlohmann/json.hpp>

#include <iostream>
#include <map>
#include <sstream>

using namespace dice;

namespace {

int usage(const std::string &why) {
  std::cerr << "dice-model-check: " << why
            << "\nusage: dice-model-check --model DIR --ids 1,2,3 "
               "(--out FILE | --generate N) [options]\n";
  return 2;
}

std::vector<int32_t> parseIds(const std::string &text) {
  std::vector<int32_t> ids;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty())
      ids.push_back(int32_t(std::stoll(item)));
  return ids;
}

/// Prefill, then for each following block: a step on a block of masks (its
/// KV must not survive), the step whose logits are reported, and the store.
int writeLogits(Transformer &model, const std::vector<int32_t> &ids,
                int64_t prefill, int64_t block, int64_t batch,
                const std::string &outPath) {
  const int64_t total = int64_t(ids.size());
  torch::Tensor all =
      torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()), torch::kInt64)
          .to(model.device());
  KVCache cache =
      model.allocateCache(batch, prefill + (total - prefill + block - 1) / block * block);

  std::vector<torch::Tensor> logits, storeLogits; // each [T_i, V]
  KVCache first = cache.rows(0, 1);
  if (prefill > 0)
    logits.push_back(
        model.prefill(all.narrow(0, 0, prefill).unsqueeze(0), first, block, true)[0]);
  cache.length = first.length;
  cache.broadcastRow(0);

  for (int64_t start = prefill; start < total; start += block) {
    int64_t len = std::min(block, total - start);
    torch::Tensor blockIds = all.narrow(0, start, len).expand({batch, len});
    model.blockStep(torch::full_like(blockIds, model.config().maskTokenId), cache);
    logits.push_back(model.blockStep(blockIds, cache)[batch - 1]);
    storeLogits.push_back(model.storeBlock(blockIds, cache, true)[batch - 1]);
  }

  std::map<std::string, torch::Tensor> outputs = {{"logits", torch::cat(logits)}};
  if (!storeLogits.empty())
    outputs["store_logits"] = torch::cat(storeLogits);
  std::vector<TensorToWrite> toWrite;
  for (auto &[name, t] : outputs) {
    t = t.to(torch::kCPU, torch::kFloat32).contiguous();
    toWrite.push_back({name, ModelDType::Float32, t.sizes().vec(), t.data_ptr(),
                       size_t(t.numel()) * sizeof(float)});
  }
  if (auto error = writeSafetensors(outPath, toWrite)) {
    std::cerr << "dice-model-check: " << error->message << "\n";
    return 1;
  }
  return 0;
}

nlohmann::json toJson(const std::vector<Candidate> &candidates) {
  nlohmann::json out = nlohmann::json::array();
  for (const Candidate &c : candidates)
    out.push_back({{"text", c.text},
                   {"tokens", c.tokens},
                   {"unmask_step", c.unmaskStep},
                   {"probability", c.probability},
                   {"stopped", c.stopped}});
  return nlohmann::json{{"candidates", out}};
}

int generate(Transformer &model, const std::vector<int32_t> &ids, int n,
             const SamplingConfig &config, uint64_t seed) {
  TransformerDenoiser denoiser(model);
  SamplerOptions options;
  options.maskTokenId = model.config().maskTokenId;
  options.stopTokenIds = model.config().stopTokenIds;
  options.seed = seed;
  BlockDiffusionSampler sampler(denoiser, options);
  ErrorOr<std::vector<Candidate>> candidates =
      sampler.generateCandidates(ids, n, config);
  if (!candidates) {
    std::cerr << "dice-model-check: " << candidates.error() << "\n";
    return 1;
  }
  std::cout << toJson(*candidates).dump() << "\n";
  return 0;
}

SamplingConfig samplingConfig(const std::map<std::string, std::string> &args,
                              int64_t block) {
  auto get = [&](const std::string &key, const std::string &fallback) {
    auto it = args.find(key);
    return it == args.end() ? fallback : it->second;
  };
  SamplingConfig config;
  config.blockLength = block;
  config.denoisingSteps = std::stoll(get("steps", "4"));
  std::string rule = get("remasking", "static");
  config.remasking = rule == "dynamic"      ? Remasking::Dynamic
                     : rule == "sequential" ? Remasking::Sequential
                                            : Remasking::Static;
  config.threshold = std::stod(get("threshold", "0.9"));
  config.temperature = std::stod(get("temperature", "1"));
  config.topK = std::stoll(get("top-k", "1"));
  config.topP = std::stod(get("top-p", "1"));
  config.maxTokens = std::stoll(get("max-tokens", "64"));
  return config;
}

} // namespace

int main(int argc, char **argv) {
  std::map<std::string, std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string key = argv[i];
    if (key.rfind("--", 0) != 0 || i + 1 >= argc)
      return usage("expected --option value pairs, got '" + key + "'");
    args[key.substr(2)] = argv[++i];
  }
  auto get = [&](const std::string &key, const std::string &fallback) {
    auto it = args.find(key);
    return it == args.end() ? fallback : it->second;
  };
  if (!args.count("model") || args.count("ids") == args.count("prompt"))
    return usage("--model and one of --ids and --prompt are required");
  if (args.count("out") == args.count("generate"))
    return usage("give exactly one of --out and --generate");

  try {
    if (args.count("prompt")) {
      if (!args.count("generate"))
        return usage("--prompt needs --generate N");
      DiceEngineOptions options;
      options.device = get("device", "cpu");
      options.dtype = get("dtype", "float32");
      options.seed = std::stoull(get("seed", "0"));
      ErrorOr<std::unique_ptr<InfillEngine>> engine =
          createDiceInfillEngine(args["model"], options);
      if (!engine) {
        std::cerr << "dice-model-check: " << engine.error() << "\n";
        return 1;
      }
      ErrorOr<ModelConfig> modelConfig = loadModelConfig(args["model"]);
      int64_t block = std::stoll(get("block", std::to_string(modelConfig->blockSize)));
      CandidatesOrError candidates = (*engine)->generateCandidates(
          args["prompt"], std::stoi(args["generate"]), samplingConfig(args, block));
      if (!candidates) {
        std::cerr << "dice-model-check: " << candidates.error << "\n";
        return 1;
      }
      std::cout << toJson(candidates.candidates).dump() << "\n";
      return 0;
    }
    ErrorOr<ModelDType> dtype = parseModelDType(get("dtype", "float32"));
    if (!dtype)
      return usage(dtype.error());
    ErrorOr<std::unique_ptr<Transformer>> model = Transformer::load(
        args["model"], torch::Device(get("device", "cpu")), toScalarType(*dtype));
    if (!model) {
      std::cerr << "dice-model-check: " << model.error() << "\n";
      return 1;
    }
    std::vector<int32_t> ids = parseIds(args["ids"]);
    int64_t block = std::stoll(get("block", std::to_string((*model)->config().blockSize)));

    if (args.count("out")) {
      int64_t prefill = std::stoll(
          get("prefill", std::to_string(int64_t(ids.size()) / block * block)));
      int64_t batch = std::stoll(get("batch", "1"));
      if (prefill < 0 || prefill > int64_t(ids.size()) || batch < 1 || block < 1)
        return usage("need 0 <= --prefill <= number of ids, --batch >= 1, --block >= 1");
      return writeLogits(**model, ids, prefill, block, batch, args["out"]);
    }

    std::string rule = get("remasking", "static");
    if (rule != "static" && rule != "dynamic" && rule != "sequential")
      return usage("--remasking is static, dynamic or sequential");
    SamplingConfig config = samplingConfig(args, block);
    return generate(**model, ids, std::stoi(args["generate"]), config,
                    std::stoull(get("seed", "0")));
  } catch (const std::exception &e) {
    std::cerr << "dice-model-check: " << e.what() << "\n";
    return 1;
  }
}
