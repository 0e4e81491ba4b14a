//===- DiceInfillEngine.cpp - the embedded DICE model as an engine --------===//

#include "dice/Model/DiceInfillEngine.h"

#include "dice/Model/BlockDiffusionSampler.h"
#include "dice/Model/Tokenizer.h"
#include "dice/Model/Transformer.h"

#include <algorithm>
#include <mutex>

namespace dice {
namespace {

class DiceInfillEngine : public InfillEngine {
public:
  DiceInfillEngine(std::string name, Tokenizer tokenizer,
                   std::unique_ptr<Transformer> model, uint64_t seed)
      : engineName(std::move(name)), tokenizer(std::move(tokenizer)),
        model(std::move(model)), denoiser(*this->model),
        sampler(denoiser, samplerOptions(this->model->config(), seed)) {}

  std::string name() const override { return engineName; }

  Result<std::vector<Candidate>>
  generateCandidates(const InfillRequest &request, int n,
                     const SamplingConfig &params) override {
    // One model, one KV cache: requests take turns.
    std::lock_guard<std::mutex> lock(mutex);
    // The checkpoint's recommended decoding, where the user chose none.
    const SamplingConfig sampling =
        applyGenerationDefaults(params, model->config().generation);
    // Greedy sampling would decode the same text n times, and the verifier
    // would judge it n times: decode it once (an engine may return fewer).
    Result<std::vector<Candidate>> decoded = sampler.generateCandidates(
        tokenizer.encode(request.prompt), sampling.deterministic() ? 1 : n,
        sampling);
    if (!decoded)
      return Error(engineName + ": " + decoded.error().describe());
    const std::vector<int64_t> &stops = model->config().stopTokenIds;
    for (Candidate &c : *decoded) {
      std::vector<int32_t> text = c.tokens;
      if (c.stopped && !text.empty() &&
          std::count(stops.begin(), stops.end(), int64_t(text.back())))
        text.pop_back(); // the stop id is not part of the answer's text
      c.text = tokenizer.decode(text);
    }
    return decoded;
  }

private:
  static SamplerOptions samplerOptions(const ModelConfig &config, uint64_t seed) {
    SamplerOptions options;
    options.maskTokenId = config.maskTokenId;
    options.stopTokenIds = config.stopTokenIds;
    options.seed = seed;
    return options;
  }

  std::string engineName;
  Tokenizer tokenizer;
  std::unique_ptr<Transformer> model;
  TransformerDenoiser denoiser;
  BlockDiffusionSampler sampler;
  std::mutex mutex;
};

} // namespace

Result<std::unique_ptr<InfillEngine>>
createDiceInfillEngine(const std::string &modelDir,
                       const DiceEngineOptions &options) {
  Result<Tokenizer> tokenizer = Tokenizer::load(modelDir);
  if (!tokenizer)
    return tokenizer.error();
  Result<ModelConfig> config = loadModelConfig(modelDir);
  if (!config)
    return config.error();
  try {
    torch::Device device(options.device);
    if (device.is_cuda() && !torch::cuda::is_available())
      return Error("device '" + options.device +
                   "' requested but no CUDA device is available");
    Result<ModelDType> dtype =
        computeDType(options.dtype, device.is_cpu(), config->torchDtype);
    if (!dtype)
      return dtype.error();
    Result<std::unique_ptr<Transformer>> model =
        Transformer::load(modelDir, device, toScalarType(*dtype), options.adapter);
    if (!model)
      return model.error();
    // The folder's last component ("dice:DICE-8B"), and the adapter's
    // ("dice:base+adapter"), as parseEngineSpec spells it. Plain string
    // work: libtorch.so exports std::filesystem symbols that must not be
    // reached.
    auto lastComponent = [](std::string dir) {
      while (dir.size() > 1 && dir.back() == '/')
        dir.pop_back();
      return dir.substr(dir.find_last_of('/') + 1);
    };
    std::string name = "dice:" + lastComponent(modelDir) +
                       (options.adapter.empty() ? "" : "+" + lastComponent(options.adapter));
    return std::unique_ptr<InfillEngine>(std::make_unique<DiceInfillEngine>(
        name, *tokenizer, std::move(*model), options.seed));
  } catch (const std::exception &e) {
    return Error(modelDir, e.what());
  }
}

} // namespace dice
