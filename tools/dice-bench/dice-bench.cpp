//===- dice-bench.cpp - block-diffusion decoding speed ------------------===//
//
// Decodes with the real BlockDiffusionSampler on random bf16 weights in the
// SDAR shapes and reports tokens/s, milliseconds per forward and the
// bandwidth roofline (weight bytes over the device copy bandwidth measured
// in the same run), with a timing breakdown of one block step. Progress
// goes to stderr, the table to stdout, everything to --json.
//
//   dice-bench --cases 8b:1:static,8b:16:static,4b:128:static --json out.json
//   dice-bench --load DIR     time Transformer::load of a checkpoint folder
//
//===----------------------------------------------------------------------===//

#include "BenchSupport.h"
#include "TrainBench.h"
#include "dice/Model/BlockDiffusionSampler.h"
#include "dice/Model/Transformer.h"
#include "dice/Support/CommandLine.h"

#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

using namespace dice;
using json = nlohmann::json;

namespace {

/// Random weights of `c` in bf16 on the GPU, as a checkpoint of that shape
/// would give them (norm weights near 1, matrices of std 0.02).
TransformerWeights randomWeights(const ModelConfig &c) {
  auto opts = torch::TensorOptions().dtype(torch::kBFloat16).device(torch::kCUDA);
  auto matrix = [&](int64_t rows, int64_t cols) {
    return torch::randn({rows, cols}, opts) * 0.02;
  };
  auto norm = [&](int64_t size) { return 1.0 + torch::randn({size}, opts) * 0.02; };
  const int64_t h = c.hiddenSize, d = c.headDim;
  const int64_t q = c.numAttentionHeads * d, kv = c.numKeyValueHeads * d;
  TransformerWeights w;
  w.embedding = matrix(c.vocabSize, h);
  w.finalNorm = norm(h);
  w.lmHead = matrix(c.vocabSize, h);
  for (int64_t l = 0; l < c.numHiddenLayers; ++l) {
    LayerWeights lw;
    lw.inputNorm = norm(h);
    lw.wq = matrix(q, h);
    lw.wk = matrix(kv, h);
    lw.wv = matrix(kv, h);
    lw.qNorm = norm(d);
    lw.kNorm = norm(d);
    lw.wo = matrix(h, q);
    lw.postNorm = norm(h);
    lw.wGate = matrix(c.intermediateSize, h);
    lw.wUp = matrix(c.intermediateSize, h);
    lw.wDown = matrix(h, c.intermediateSize);
    w.layers.push_back(std::move(lw));
  }
  return w;
}

/// Bytes one forward reads from the weights (the embedding rows read are
/// negligible and left out).
double weightBytes(const ModelConfig &c) {
  const double h = c.hiddenSize, d = c.headDim, i = c.intermediateSize;
  const double q = c.numAttentionHeads * d, kv = c.numKeyValueHeads * d;
  const double layer = h * (q + 2 * kv) + q * h + 3 * h * i + 4 * h + 2 * d;
  return 2.0 * (c.numHiddenLayers * layer + c.vocabSize * h + h);
}

/// Device-to-device copy bandwidth, bytes read plus written per second.
double copyBandwidth() {
  auto opts = torch::TensorOptions().dtype(torch::kUInt8).device(torch::kCUDA);
  const int64_t bytes = int64_t(2) << 30;
  torch::Tensor a = torch::randint(0, 255, {bytes}, opts), b = torch::empty_like(a);
  for (int k = 0; k < 3; ++k)
    b.copy_(a);
  deviceSync();
  std::vector<double> times;
  for (int k = 0; k < 10; ++k) {
    double t0 = now();
    b.copy_(a);
    deviceSync();
    times.push_back(now() - t0);
  }
  std::sort(times.begin(), times.end());
  return 2.0 * double(bytes) / times[times.size() / 2];
}

/// Median milliseconds of `body` over `reps` runs, timed with events after
/// `warmup` runs.
template <typename Body> double medianMs(Body body, int reps = 20, int warmup = 3) {
  for (int k = 0; k < warmup; ++k)
    body();
  deviceSync();
  std::vector<double> times;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  for (int k = 0; k < reps; ++k) {
    cudaEventRecord(start, c10::cuda::getCurrentCUDAStream());
    body();
    cudaEventRecord(stop, c10::cuda::getCurrentCUDAStream());
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    times.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// Captures `body` once as a CUDA graph and returns the median time of its
/// replays: the GPU time of a kernel sequence without launch overhead.
template <typename Body> double graphMs(Body body) {
  c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
  at::cuda::CUDAGraph graph;
  {
    c10::cuda::CUDAStreamGuard guard(side);
    body();
    side.synchronize();
    graph.capture_begin();
    body();
    graph.capture_end();
    side.synchronize();
  }
  return medianMs([&] { graph.replay(); });
}

/// The sampler's denoiser with counts of forwards and a progress line.
class CountingDenoiser : public Denoiser {
public:
  CountingDenoiser(Denoiser &inner, std::string label, int64_t blocks)
      : inner(inner), label(std::move(label)), blocks(blocks) {}

  torch::Device device() const override { return inner.device(); }
  void start(const torch::Tensor &prefix, int64_t batch, int64_t capacity,
             int64_t blockSize) override {
    inner.start(prefix, batch, capacity, blockSize);
  }
  torch::Tensor denoise(const torch::Tensor &block) override {
    ++forwards;
    return inner.denoise(block);
  }
  void commit(const torch::Tensor &block) override {
    ++forwards;
    progress();
    inner.commit(block);
  }
  torch::Tensor commitAndDenoise(const torch::Tensor &done,
                                 const torch::Tensor &next) override {
    ++forwards;
    progress();
    return inner.commitAndDenoise(done, next);
  }

  int64_t forwards = 0, committed = 0;

private:
  void progress() {
    ++committed;
    double t = now();
    if (t - lastPrint < 0.5 && committed != blocks)
      return;
    lastPrint = t;
    std::fprintf(stderr, "\r%s: block %lld/%lld, %lld forwards   ", label.c_str(),
                 (long long)committed, (long long)blocks, (long long)forwards);
    std::fflush(stderr);
  }

  Denoiser &inner;
  std::string label;
  int64_t blocks;
  double lastPrint = 0;
};

struct Case {
  std::string shape;
  int64_t batch;
  std::string mode; // static, dynamic
};

std::vector<Case> parseCases(const std::string &spec) {
  std::vector<Case> cases;
  std::stringstream list(spec);
  std::string item;
  while (std::getline(list, item, ',')) {
    std::stringstream parts(item);
    std::string shape, batch, mode;
    std::getline(parts, shape, ':');
    std::getline(parts, batch, ':');
    std::getline(parts, mode, ':');
    cases.push_back({shape, std::stoll(batch), mode.empty() ? "static" : mode});
  }
  return cases;
}

double peakGiB() {
  auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(0);
  return double(stats.allocated_bytes[0].peak) / double(1 << 30);
}

void resetPeak() { c10::cuda::CUDACachingAllocator::resetPeakStats(0); }

/// ||a - b|| / ||b|| in fp32.
double relError(const torch::Tensor &a, const torch::Tensor &b) {
  torch::Tensor a32 = a.to(torch::kFloat32), b32 = b.to(torch::kFloat32);
  return ((a32 - b32).norm() / b32.norm()).item<double>();
}

/// The fixed-shape step path (graphs) against the reference forward at the
/// same cache state, for a step and for a store merged with a step.
json checkAgainstReference(Transformer &model, int64_t prompt, int64_t batch) {
  const ModelConfig &c = model.config();
  auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(torch::kCUDA);
  KVCache cache = model.allocateCache(batch, prompt + 16);
  torch::Tensor ids = torch::randint(0, c.vocabSize, {1, prompt}, i64);
  KVCache first = cache.rows(0, 1);
  model.prefill(ids, first, 4);
  cache.length = first.length;
  cache.broadcastRow(0);
  torch::Tensor a = torch::randint(0, c.vocabSize, {batch, 4}, i64);
  torch::Tensor b = torch::randint(0, c.vocabSize, {batch, 4}, i64);
  torch::Tensor refStep = model.blockStep(a, cache).clone();
  torch::Tensor step = model.denoiseBlock(a, cache).clone();
  model.storeBlock(a, cache);
  torch::Tensor refNext = model.blockStep(b, cache).clone();
  cache.length -= 4;
  torch::Tensor merged = model.commitAndDenoise(a, b, cache).clone();
  model.clearCudaGraphs();
  return {{"step_rel_error", relError(step, refStep)},
          {"store_and_step_rel_error", relError(merged, refNext)},
          {"same_argmax_step",
           (step.argmax(-1) == refStep.argmax(-1)).to(torch::kFloat32).mean().item<double>()}};
}

/// GPU time of one block step split by part, each part's kernels captured
/// alone as a graph at the shapes of a step at `length` cached positions.
json breakdown(Transformer &model, int64_t batch, int64_t length) {
  const ModelConfig &c = model.config();
  const int64_t t = 4, rows = batch * t, h = c.hiddenSize, d = c.headDim;
  const int64_t hq = c.numAttentionHeads, hkv = c.numKeyValueHeads;
  const int64_t keys = (length + t + 63) / 64 * 64;
  auto bf16 = torch::TensorOptions().dtype(torch::kBFloat16).device(torch::kCUDA);
  auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(torch::kCUDA);
  // The same weight matrices the model uses, through a throwaway model of
  // one layer's shapes: matmuls of the real sizes on real-sized buffers.
  std::vector<torch::Tensor> mats;
  const int64_t inter = c.intermediateSize;
  for (int64_t l = 0; l < c.numHiddenLayers; ++l)
    mats.push_back(torch::randn({(hq + 2 * hkv) * d + 2 * inter, h}, bf16) * 0.02);
  torch::Tensor out = torch::randn({c.numHiddenLayers, h, hq * d}, bf16) * 0.02;
  torch::Tensor down = torch::randn({c.numHiddenLayers, h, inter}, bf16) * 0.02;
  torch::Tensor head = torch::randn({c.vocabSize, h}, bf16) * 0.02;
  torch::Tensor x = torch::randn({rows, h}, bf16);
  torch::Tensor act = torch::randn({rows, inter}, bf16);
  torch::Tensor attnIn = torch::randn({rows, hq * d}, bf16);
  double matmul = graphMs([&] {
    for (int64_t l = 0; l < c.numHiddenLayers; ++l) {
      const torch::Tensor &m = mats[size_t(l)];
      torch::mm(x, m.narrow(0, 0, (hq + 2 * hkv) * d).t());
      x.addmm(attnIn, out[l].t());
      torch::mm(x, m.narrow(0, (hq + 2 * hkv) * d, 2 * inter).t());
      x.addmm(act, down[l].t());
    }
    torch::mm(x, head.t());
  });
  mats.clear();
  out = down = torch::Tensor();

  torch::Tensor kc = torch::randn({c.numHiddenLayers, batch, hkv, keys, d}, bf16);
  torch::Tensor vc = torch::randn_like(kc);
  torch::Tensor q = torch::randn({batch, hkv, t * (hq / hkv), d}, bf16);
  torch::Tensor bias = torch::zeros({t * (hq / hkv), keys}, bf16);
  double attention = graphMs([&] {
    for (int64_t l = 0; l < c.numHiddenLayers; ++l)
      at::scaled_dot_product_attention(q, kc[l], vc[l], bias);
  });
  kc = vc = torch::Tensor();

  // The whole step through the model's own path and graph.
  KVCache cache = model.allocateCache(batch, length + 2 * t);
  cache.keys.normal_();
  cache.values.normal_();
  cache.length = length;
  torch::Tensor ids = torch::randint(0, c.vocabSize, {batch, t}, i64);
  model.denoiseBlock(ids, cache);
  double step = medianMs([&] { model.denoiseBlock(ids, cache); });
  double stepEager = 0;
  model.setUseCudaGraphs(false);
  stepEager = medianMs([&] { model.denoiseBlock(ids, cache); }, 5, 1);
  double reference = medianMs([&] { model.blockStep(ids, cache); }, 5, 1);
  model.setUseCudaGraphs(true);
  model.clearCudaGraphs();

  // Sampling and selection of one step, eagerly as the sampler runs them.
  torch::Tensor logits = torch::randn({batch, t, c.vocabSize}, bf16);
  torch::Tensor masked = torch::ones({batch, t}, i64.dtype(torch::kBool));
  double sampling = medianMs([&] {
    auto [x0, p] = sampleTokens(logits, 1.0, 1, 1.0, std::nullopt);
    selectUnmasked(Remasking::Static, masked, p, 1, 0.9);
  });
  return {{"batch", batch},
          {"cached_positions", length},
          {"step_graph_ms", step},
          {"step_no_graph_ms", stepEager},
          {"step_reference_forward_ms", reference},
          {"matmuls_ms", matmul},
          {"attention_ms", attention},
          {"other_in_graph_ms", step - matmul - attention},
          {"sampling_ms", sampling}};
}

int loadTest(const std::string &dir) {
  torch::ones({1}, torch::kCUDA); // the allocator's stats exist once CUDA is up
  resetPeak();
  double t0 = now();
  Result<std::unique_ptr<Transformer>> model =
      Transformer::load(dir, torch::Device(torch::kCUDA, 0), torch::kBFloat16);
  deviceSync();
  double seconds = now() - t0;
  if (!model) {
    std::cerr << "dice-bench: " << model.error().describe() << "\n";
    return 1;
  }
  json out = {{"load_seconds", seconds},
              {"peak_allocated_gib", peakGiB()},
              {"weight_gib", weightBytes((*model)->config()) / double(1 << 30)}};
  std::cout << out.dump() << "\n";
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  CommandLine cl("dice-bench",
                 "block-diffusion decoding speed on random bf16 weights in "
                 "the SDAR shapes: progress on stderr, a table on stdout, "
                 "everything in --json",
                 "[--cases <shape:batch:mode,...>] [options] | --load <dir>",
                 /*usageExitCode=*/2);
  std::string casesSpec = "1.7b:1:static", jsonPath, loadDir;
  int64_t promptLength = 512, newTokens = 256;
  bool noCheck = false;
  cl.add_option("--cases", casesSpec,
                "the cases to time, comma-separated: shape (1.7b, 4b, 8b), "
                "batch, mode (static or dynamic)")
      ->type_name("shape:batch:mode,...")
      ->capture_default_str();
  cl.add_option("--prompt", promptLength, "prompt tokens")
      ->type_name("n")
      ->capture_default_str();
  cl.add_option("--new-tokens", newTokens, "tokens decoded per candidate")
      ->type_name("n")
      ->capture_default_str();
  cl.add_option("--json", jsonPath, "write the results as JSON")
      ->type_name("file");
  cl.add_flag("--no-check", noCheck,
              "skip comparing the graph path with the reference forward");
  cl.add_option("--load", loadDir,
                "instead: time Transformer::load of a checkpoint folder")
      ->type_name("dir");
  TrainBenchOptions train;
  cl.add_option("--train", train.mode,
                "instead: time dice-train's SFT step or one RL step on the "
                "first --cases shape")
      ->check(oneOf({"sft", "rl"}));
  cl.add_option("--lora", train.loraRank, "--train: LoRA rank (0: full fine-tuning)");
  cl.add_flag("--recompute", train.recompute, "--train: recompute layers in backward");
  cl.add_option("--samples", train.samples, "--train sft: samples per step");
  cl.add_option("--answer", train.answerTokens, "--train sft: answer tokens per sample");
  cl.add_option("--steps", train.steps, "--train sft: timed steps");
  cl.add_option("--rollouts", train.rollouts, "--train rl: rollouts of the prompt");
  if (std::optional<int> exit = cl.parse(argc, argv))
    return *exit;
  const bool check = !noCheck;
  if (!train.mode.empty()) {
    train.shape = casesSpec.substr(0, casesSpec.find(':'));
    train.promptTokens = promptLength;
    train.maxTokens = newTokens;
    train.jsonPath = jsonPath;
    return runTrainBench(train);
  }
  if (!torch::cuda::is_available()) {
    std::cerr << "dice-bench: no CUDA device\n";
    return 1;
  }
  if (!loadDir.empty())
    return loadTest(loadDir);

  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  int driver = 0;
  cudaDriverGetVersion(&driver);
  const double bandwidth = copyBandwidth();
  std::fprintf(stderr, "%s, copy bandwidth %.0f GB/s\n", prop.name, bandwidth / 1e9);
  json results = {{"gpu", prop.name},
                  {"cuda_driver_version", driver},
                  {"torch_version", TORCH_VERSION},
                  {"copy_bandwidth_gbps", bandwidth / 1e9},
                  {"prompt_tokens", promptLength},
                  {"new_tokens", newTokens},
                  {"cases", json::array()}};

  std::vector<Case> cases = parseCases(casesSpec);
  std::string loadedShape;
  std::unique_ptr<Transformer> model;
  for (const Case &c : cases) {
    if (c.shape != loadedShape) {
      model.reset();
      c10::cuda::CUDACachingAllocator::emptyCache();
      ModelConfig config = sdarShape(c.shape);
      model = std::make_unique<Transformer>(config, randomWeights(config));
      loadedShape = c.shape;
      if (check) {
        json errors = checkAgainstReference(*model, promptLength, 2);
        std::fprintf(stderr, "%s: graph path vs reference forward: %s\n",
                     c.shape.c_str(), errors.dump().c_str());
        results["checks"][c.shape] = errors;
      }
    }
    const ModelConfig &config = model->config();
    const std::string label = c.shape + " b" + std::to_string(c.batch) + " " + c.mode;

    SamplingConfig sampling;
    sampling.blockLength = 4;
    sampling.denoisingSteps = 4;
    sampling.topK = 1;
    sampling.topP = 1.0;
    sampling.temperature = 1.0;
    sampling.maxTokens = newTokens;
    sampling.remasking = c.mode == "dynamic" ? Remasking::Dynamic : Remasking::Static;
    sampling.threshold = 0.9;
    if (c.mode == "dynamic")
      sampling.topK = 0; // the rollout setting
    SamplerOptions options;
    options.stopTokenIds = {}; // random weights: always decode newTokens
    options.maskTokenId = config.maskTokenId;

    std::vector<int32_t> prompt(static_cast<size_t>(promptLength));
    torch::Tensor promptIds = torch::randint(0, 151000, {promptLength}, torch::kInt64);
    for (int64_t j = 0; j < promptLength; ++j)
      prompt[size_t(j)] = int32_t(promptIds[j].item<int64_t>());

    TransformerDenoiser denoiser(*model);
    const int64_t blocks = (newTokens + 3) / 4;
    // The first run captures the graphs; the second is timed.
    double seconds = 0;
    int64_t forwards = 0;
    resetPeak();
    for (int run = 0; run < 2; ++run) {
      CountingDenoiser counting(denoiser, label + (run ? "" : " (warm-up)"), blocks);
      BlockDiffusionSampler sampler(counting, options);
      deviceSync();
      double t0 = now();
      Result<std::vector<Candidate>> out =
          sampler.generateCandidates(prompt, int(c.batch), sampling);
      deviceSync();
      seconds = now() - t0;
      forwards = counting.forwards;
      std::fprintf(stderr, "\n");
      if (!out) {
        std::cerr << "dice-bench: " << out.error().describe() << "\n";
        return 1;
      }
    }
    // Prefill alone, to separate it from the block steps.
    KVCache prefillCache = model->allocateCache(1, promptLength);
    torch::Tensor p = promptIds.to(torch::kCUDA).unsqueeze(0);
    double prefillMs = medianMs(
        [&] {
          prefillCache.length = 0;
          model->prefill(p, prefillCache, 4);
        },
        3, 1);
    prefillCache = KVCache();

    const double tokens = double(c.batch * newTokens);
    const double stepMs = (seconds * 1e3 - prefillMs) / double(forwards);
    const double rooflineMs = weightBytes(config) / bandwidth * 1e3;
    json row = {{"shape", c.shape},
                {"batch", c.batch},
                {"mode", c.mode},
                {"seconds", seconds},
                {"tokens_per_s", tokens / seconds},
                {"forwards", forwards},
                {"forwards_per_block", double(forwards) / double(blocks)},
                {"prefill_ms", prefillMs},
                {"ms_per_forward", stepMs},
                {"roofline_ms_per_forward", rooflineMs},
                {"roofline_tokens_per_s", tokens / (double(forwards) * rooflineMs / 1e3)},
                {"peak_allocated_gib", peakGiB()},
                {"weight_gib", weightBytes(config) / double(1 << 30)}};
    results["cases"].push_back(row);
    std::fprintf(stderr, "%s: %.1f tok/s, %.2f ms/forward (roofline %.2f)\n",
                 label.c_str(), tokens / seconds, stepMs, rooflineMs);
    if (!jsonPath.empty())
      std::ofstream(jsonPath) << results.dump(2) << "\n";

    if (c.mode == "static" && !results["breakdown"].contains(label)) {
      json parts = breakdown(*model, c.batch, promptLength + newTokens / 2);
      results["breakdown"][label] = parts;
      std::fprintf(stderr, "%s breakdown: %s\n", label.c_str(), parts.dump().c_str());
    }
  }
  if (!jsonPath.empty())
    std::ofstream(jsonPath) << results.dump(2) << "\n";

  std::printf("\n| model | batch | mode | tok/s | ms/forward | forwards/block | "
              "roofline ms/forward | roofline tok/s | peak GiB |\n"
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (const json &r : results["cases"])
    std::printf("| %s | %lld | %s | %.1f | %.2f | %.2f | %.2f | %.0f | %.1f |\n",
                r["shape"].get<std::string>().c_str(), (long long)r["batch"].get<int64_t>(),
                r["mode"].get<std::string>().c_str(), r["tokens_per_s"].get<double>(),
                r["ms_per_forward"].get<double>(), r["forwards_per_block"].get<double>(),
                r["roofline_ms_per_forward"].get<double>(),
                r["roofline_tokens_per_s"].get<double>(),
                r["peak_allocated_gib"].get<double>());
  return 0;
}
