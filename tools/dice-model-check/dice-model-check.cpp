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
// InfillEngine (tokenizer + model + sampler) and carry their text. With
// --adapter DIR, the adapter (PEFT's format) is merged into the model.
//
//===----------------------------------------------------------------------===//

#include "dice/Model/BlockDiffusionSampler.h"
#include "dice/Model/DiceInfillEngine.h"
#include "dice/Model/Safetensors.h"
#include "dice/Model/Transformer.h"
#include "dice/Support/CommandLine.h"

#include <nlohmann/json.hpp>

#include <iostream>
#include <map>

using namespace dice;

namespace {

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
  if (Status written = writeSafetensors(outPath, toWrite); !written) {
    std::cerr << "dice-model-check: " << written.error().describe() << "\n";
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
  Result<std::vector<Candidate>> candidates =
      sampler.generateCandidates(ids, n, config);
  if (!candidates) {
    std::cerr << "dice-model-check: " << candidates.error().describe() << "\n";
    return 1;
  }
  std::cout << toJson(*candidates).dump() << "\n";
  return 0;
}

/// What the command line asks for.
struct Options {
  std::string model, adapter, prompt, out, device = "cpu", dtype = "float32";
  std::vector<int32_t> ids;
  int generate = 0;
  int64_t prefill = 0, block = 0, batch = 1;
  uint64_t seed = 0;
  SamplingConfig sampling;
};

/// The checkpoint's block size unless --block gives one.
int64_t blockSize(const CLI::Option *blockOption, const Options &options,
                  int64_t checkpointBlock) {
  return blockOption->count() ? options.block : checkpointBlock;
}

} // namespace

int main(int argc, char **argv) {
  CommandLine cl(
      "dice-model-check",
      "runs a checkpoint on given token ids: writes the logits of a prefill "
      "and cached block steps (--out), or decodes candidates with the "
      "block-diffusion sampler and prints them as JSON (--generate); with "
      "--prompt, candidates come from the whole InfillEngine and carry "
      "their text",
      "--model <dir> (--ids <ids> | --prompt <text>) "
      "(--out <file> | --generate <n>) [options]",
      /*usageExitCode=*/2);
  Options o;
  o.sampling.maxTokens = 64;
  cl.add_option("--model", o.model, "the checkpoint folder")
      ->type_name("dir")
      ->required();
  cl.add_option("--adapter", o.adapter,
                "an adapter folder (PEFT's format) merged into the model")
      ->type_name("dir");
  CLI::Option *idsOption =
      cl.add_option("--ids", o.ids, "the prompt's token ids, comma-separated")
          ->type_name("1,2,3")
          ->delimiter(',');
  CLI::Option *promptOption =
      cl.add_option("--prompt", o.prompt,
                    "the prompt as text, through the engine (with --generate)")
          ->type_name("text")
          ->excludes(idsOption);
  CLI::Option *outOption =
      cl.add_option("--out", o.out,
                    "write the logits (and store_logits) to a safetensors file")
          ->type_name("file");
  CLI::Option *generateOption =
      cl.add_option("--generate", o.generate,
                    "decode this many candidates and print them as JSON")
          ->type_name("n")
          ->excludes(outOption);
  cl.add_option("--device", o.device, "a torch device: cpu, cuda, cuda:1")
      ->type_name("device")
      ->capture_default_str();
  cl.add_option("--dtype", o.dtype, "the weights' dtype in memory")
      ->type_name("float32|float16|bfloat16")
      ->check([](const std::string &name) {
        Result<ModelDType> dtype = parseModelDType(name);
        return dtype ? std::string() : dtype.error().describe();
      })
      ->capture_default_str();
  CLI::Option *blockOption =
      cl.add_option("--block", o.block,
                    "block length (the checkpoint's by default)")
          ->type_name("n");
  CLI::Option *prefillOption =
      cl.add_option("--prefill", o.prefill,
                    "--out: ids in the prefill (whole blocks of the ids by "
                    "default); the rest go through block steps")
          ->type_name("n");
  cl.add_option("--batch", o.batch,
                "--out: rows of the block steps (the last one's logits are "
                "written)")
      ->type_name("n")
      ->capture_default_str();
  cl.add_option("--steps", o.sampling.denoisingSteps,
                "denoising steps per block")
      ->type_name("n")
      ->capture_default_str();
  cl.add_option("--remasking", o.sampling.remasking,
                "which positions each step unmasks")
      ->type_name("static|dynamic|sequential")
      ->transform(oneOf<Remasking>({{"static", Remasking::Static},
                                    {"dynamic", Remasking::Dynamic},
                                    {"sequential", Remasking::Sequential}}))
      ->default_str("static");
  cl.add_option("--threshold", o.sampling.threshold,
                "confidence needed to unmask (dynamic)")
      ->type_name("p")
      ->capture_default_str();
  cl.add_option("--temperature", o.sampling.temperature, "0 is greedy")
      ->type_name("t")
      ->capture_default_str();
  cl.add_option("--top-k", o.sampling.topK, "0 disables top-k")
      ->type_name("k")
      ->capture_default_str();
  cl.add_option("--top-p", o.sampling.topP, "nucleus sampling's mass")
      ->type_name("p")
      ->capture_default_str();
  cl.add_option("--max-tokens", o.sampling.maxTokens, "tokens per candidate")
      ->type_name("n")
      ->capture_default_str();
  cl.add_option("--seed", o.seed, "the sampler's seed")
      ->type_name("n")
      ->capture_default_str();
  if (std::optional<int> exit = cl.parse(argc, argv))
    return *exit;
  if (!idsOption->count() && !promptOption->count())
    return cl.usageError("--model and one of --ids and --prompt are required");
  if (!outOption->count() && !generateOption->count())
    return cl.usageError("give exactly one of --out and --generate");

  try {
    if (promptOption->count()) {
      if (!generateOption->count())
        return cl.usageError("--prompt needs --generate N");
      DiceEngineOptions options;
      options.device = o.device;
      options.dtype = o.dtype;
      options.seed = o.seed;
      options.adapter = o.adapter;
      Result<std::unique_ptr<InfillEngine>> engine =
          createDiceInfillEngine(o.model, options);
      if (!engine) {
        std::cerr << "dice-model-check: " << engine.error().describe() << "\n";
        return 1;
      }
      Result<ModelConfig> modelConfig = loadModelConfig(o.model);
      o.sampling.blockLength =
          blockSize(blockOption, o, modelConfig->blockSize);
      Result<std::vector<Candidate>> candidates =
          (*engine)->generateCandidates(o.prompt, o.generate, o.sampling);
      if (!candidates) {
        std::cerr << "dice-model-check: " << candidates.error().describe()
                  << "\n";
        return 1;
      }
      std::cout << toJson(*candidates).dump() << "\n";
      return 0;
    }
    Result<std::unique_ptr<Transformer>> model =
        Transformer::load(o.model, torch::Device(o.device),
                          toScalarType(*parseModelDType(o.dtype)), o.adapter);
    if (!model) {
      std::cerr << "dice-model-check: " << model.error().describe() << "\n";
      return 1;
    }
    const std::vector<int32_t> &ids = o.ids;
    int64_t block = blockSize(blockOption, o, (*model)->config().blockSize);

    if (outOption->count()) {
      int64_t prefill = prefillOption->count()
                            ? o.prefill
                            : int64_t(ids.size()) / block * block;
      if (prefill < 0 || prefill > int64_t(ids.size()) || o.batch < 1 ||
          block < 1)
        return cl.usageError(
            "need 0 <= --prefill <= number of ids, --batch >= 1, --block >= 1");
      return writeLogits(**model, ids, prefill, block, o.batch, o.out);
    }

    o.sampling.blockLength = block;
    return generate(**model, ids, o.generate, o.sampling, o.seed);
  } catch (const std::exception &e) {
    std::cerr << "dice-model-check: " << e.what() << "\n";
    return 1;
  }
}
