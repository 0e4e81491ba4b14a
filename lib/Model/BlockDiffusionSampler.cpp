//===- BlockDiffusionSampler.cpp - block-diffusion decoding ---------------===//
//
// Inside a block every operation is a tensor operation on the device with
// shapes fixed before the block starts; the host reads the device once per
// block (stop ids) and, for dynamic remasking only, once per step (whether
// any mask is left, to skip forwards that would change nothing).
//
//===----------------------------------------------------------------------===//

#include "dice/Model/BlockDiffusionSampler.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include <algorithm>
#include <limits>

namespace dice {
namespace {

constexpr double negInf = -std::numeric_limits<double>::infinity();

torch::Generator makeGenerator(torch::Device device, uint64_t seed) {
  torch::Generator gen =
      device.is_cuda()
          ? at::detail::getCUDAHooks().getNewGenerator(device.index())
          : at::detail::createCPUGenerator(seed);
  gen.set_current_seed(seed);
  return gen;
}

/// The `n` most confident positions of each row ([N, B] bool); a stable
/// sort gives ties to the leftmost position, so with top-k 1 (every
/// probability 1) static remasking decodes left to right.
torch::Tensor mostConfident(const torch::Tensor &confidence, int64_t n) {
  torch::Tensor chosen = torch::zeros_like(confidence, torch::kBool);
  n = std::min(n, confidence.size(1));
  if (n <= 0)
    return chosen;
  torch::Tensor order = std::get<1>(
      confidence.sort(/*stable=*/true, /*dim=*/1, /*descending=*/true));
  return chosen.scatter_(1, order.narrow(1, 0, n), true);
}

} // namespace

std::pair<torch::Tensor, torch::Tensor>
sampleTokens(const torch::Tensor &logits, double temperature, int64_t topK,
             double topP, std::optional<torch::Generator> generator) {
  torch::Tensor l = logits.to(torch::kFloat32); // [..., V]
  const int64_t vocab = l.size(-1);
  if (temperature > 0 && temperature != 1.0)
    l = l / temperature;
  if (topK > 0 && topK < vocab) {
    torch::Tensor kth = std::get<0>(l.topk(topK, -1)).narrow(-1, topK - 1, 1);
    l = l.masked_fill(l < kth, negInf);
  }
  if (topP < 1.0) {
    // Keep the most likely tokens until their mass reaches top_p: a token
    // goes when the mass before it already exceeds top_p.
    auto [sorted, order] = l.sort(-1, /*descending=*/true);
    torch::Tensor sortedProbs = torch::softmax(sorted, -1);
    torch::Tensor massBefore = sortedProbs.cumsum(-1) - sortedProbs;
    torch::Tensor drop = torch::zeros_like(l, torch::kBool)
                             .scatter(-1, order, massBefore > topP);
    l = l.masked_fill(drop, negInf);
  }
  torch::Tensor probs = torch::softmax(l, -1); // [..., V]
  torch::Tensor tokens;
  if (temperature == 0) {
    tokens = probs.argmax(-1);
  } else {
    tokens = torch::multinomial(probs.reshape({-1, vocab}), 1,
                                /*replacement=*/false, generator)
                 .view(probs.sizes().slice(0, probs.dim() - 1));
  }
  torch::Tensor tokenProbs = probs.gather(-1, tokens.unsqueeze(-1)).squeeze(-1);
  return {tokens, tokenProbs};
}

std::vector<int64_t> unmaskSchedule(int64_t blockLength, int64_t steps) {
  std::vector<int64_t> schedule(size_t(steps), blockLength / steps);
  for (int64_t s = 0; s < blockLength % steps; ++s)
    ++schedule[size_t(s)];
  return schedule;
}

torch::Tensor selectUnmasked(Remasking rule, const torch::Tensor &masked,
                             const torch::Tensor &confidence, int64_t n,
                             double threshold) {
  torch::Tensor conf = confidence.masked_fill(~masked, negInf); // [N, B]
  switch (rule) {
  case Remasking::Sequential: {
    torch::Tensor rank = masked.to(torch::kInt64).cumsum(1); // 1-based
    return masked & (rank <= n);
  }
  case Remasking::Static:
    return masked & mostConfident(conf, n);
  case Remasking::Dynamic: {
    torch::Tensor confident = masked & (conf > threshold);
    torch::Tensor enough = confident.sum(1, /*keepdim=*/true) >= n;
    return torch::where(enough, confident, masked & mostConfident(conf, n));
  }
  }
  return torch::zeros_like(masked);
}

void TransformerDenoiser::start(const torch::Tensor &prefix, int64_t batch,
                                int64_t capacity, int64_t blockSize) {
  if (!cache.keys.defined() || cache.batch() != batch ||
      cache.capacity() < capacity) {
    // Graphs captured on the old cache would write into freed memory.
    model.clearCudaGraphs();
    cache = KVCache();
    cache = model.allocateCache(batch, capacity);
  }
  cache.length = 0;
  if (prefix.numel() == 0)
    return;
  // Every candidate shares the prompt: prefill it once, then copy its KV.
  KVCache first = cache.rows(0, 1);
  model.prefill(prefix.unsqueeze(0), first, blockSize); // [1, P']
  cache.length = first.length;
  cache.broadcastRow(0);
}

torch::Tensor TransformerDenoiser::denoise(const torch::Tensor &block) {
  return model.denoiseBlock(block, cache);
}

void TransformerDenoiser::commit(const torch::Tensor &block) {
  model.commitBlock(block, cache);
}

torch::Tensor TransformerDenoiser::commitAndDenoise(const torch::Tensor &done,
                                                    const torch::Tensor &next) {
  return model.commitAndDenoise(done, next, cache);
}

BlockDiffusionSampler::BlockDiffusionSampler(Denoiser &denoiser,
                                             SamplerOptions options)
    : denoiser(denoiser), options(std::move(options)) {}

Result<std::vector<Candidate>>
BlockDiffusionSampler::generateCandidates(const std::vector<int32_t> &promptIds,
                                          int n, const SamplingConfig &config) {
  auto invalid = [](const std::string &what) {
    return Error("invalid sampling configuration: " + what);
  };
  if (n < 1)
    return invalid("candidates must be at least 1");
  if (config.blockLength < 1 || config.denoisingSteps < 1)
    return invalid("block_length and denoising_steps must be at least 1");
  if (config.maxTokens < 1)
    return invalid("max_tokens must be at least 1");
  if (config.temperature < 0 || config.topK < 0 || !(config.topP > 0) ||
      config.topP > 1)
    return invalid("temperature >= 0, top_k >= 0 and 0 < top_p <= 1 needed");
  try {
    return generate(promptIds, n, config);
  } catch (const std::exception &e) {
    return Error(std::string("block-diffusion decoding failed: ") + e.what());
  }
}

std::vector<Candidate>
BlockDiffusionSampler::generate(const std::vector<int32_t> &promptIds, int n,
                                const SamplingConfig &config) {
  torch::NoGradGuard noGrad;
  const torch::Device device = denoiser.device();
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(device);
  const int64_t b = config.blockLength;
  const int64_t promptLength = int64_t(promptIds.size());
  // The prompt's whole blocks are prefilled; its remainder opens the first
  // decoded block, whose masks follow it (SDAR's generate does the same).
  const int64_t prefilled = promptLength / b * b;
  const int64_t tail = promptLength - prefilled;
  const int64_t numBlocks = (tail + config.maxTokens + b - 1) / b;

  torch::Tensor prompt =
      torch::tensor(std::vector<int64_t>(promptIds.begin(), promptIds.end()),
                    torch::kInt64)
          .to(device);
  denoiser.start(prompt.narrow(0, 0, prefilled), n, prefilled + numBlocks * b,
                 b);

  // Everything after the prefilled prompt, with what each answer token
  // recorded when it was unmasked.
  torch::Tensor answer =
      torch::full({n, numBlocks * b}, options.maskTokenId, i64); // [N, nb*B]
  answer.narrow(1, 0, tail).copy_(prompt.narrow(0, prefilled, tail).expand({n, tail}));
  torch::Tensor unmaskStep = torch::full({n, numBlocks * b}, -1, i64);
  torch::Tensor unmaskProb = torch::zeros(
      {n, numBlocks * b}, torch::TensorOptions().dtype(torch::kFloat32).device(device));
  torch::Tensor rowSteps = torch::zeros({n}, i64); // per-candidate step count

  const std::vector<int64_t> schedule = unmaskSchedule(b, config.denoisingSteps);
  torch::Generator gen = makeGenerator(device, options.seed);
  std::vector<bool> running(size_t(n), true);
  torch::Tensor runningRows = torch::ones({n}, i64.dtype(torch::kBool)); // [N]
  int64_t blocksDone = 0;
  // A finished block is stored together with the next block's first step
  // (one forward instead of two); until then it waits here.
  torch::Tensor uncommitted;

  for (int64_t k = 0; k < numBlocks; ++k) {
    torch::Tensor block = answer.narrow(1, k * b, b).clone(); // [N, B]
    torch::Tensor masked = (block == options.maskTokenId) & runningRows.unsqueeze(1);
    int64_t masksLeft = k == 0 ? b - tail : b; // the same in every running row

    for (int64_t s = 0; s < config.denoisingSteps; ++s) {
      if (config.remasking != Remasking::Dynamic ? masksLeft == 0
                                                 : !masked.any().item<bool>())
        break;
      torch::Tensor logits = uncommitted.defined()
                                 ? denoiser.commitAndDenoise(uncommitted, block)
                                 : denoiser.denoise(block); // [N, B, V]
      uncommitted = torch::Tensor();
      auto [x0, x0Prob] = sampleTokens(logits, config.temperature, config.topK,
                                       config.topP, gen); // [N, B], [N, B]
      torch::Tensor unmask =
          selectUnmasked(config.remasking, masked, x0Prob,
                         schedule[size_t(s)], config.threshold); // [N, B]
      block = torch::where(unmask, x0, block);
      torch::Tensor steps = unmaskStep.narrow(1, k * b, b);
      steps.copy_(torch::where(unmask, rowSteps.unsqueeze(1), steps));
      torch::Tensor probs = unmaskProb.narrow(1, k * b, b);
      probs.copy_(torch::where(unmask, x0Prob, probs));
      rowSteps += masked.any(1).to(torch::kInt64);
      masked = masked & ~unmask;
      masksLeft -= std::min(schedule[size_t(s)], masksLeft);
    }
    if (uncommitted.defined()) // no step ran in this block
      denoiser.commit(uncommitted);
    uncommitted = block;
    answer.narrow(1, k * b, b).copy_(block);
    blocksDone = k + 1;

    // Per-candidate stopping, after a block holding a stop id (the prompt's
    // tail in the first block does not count).
    torch::Tensor blockHost = block.cpu();
    auto tokens = blockHost.accessor<int64_t, 2>();
    std::vector<int64_t> stoppedNow;
    for (int64_t row = 0; row < n; ++row) {
      if (!running[size_t(row)])
        continue;
      for (int64_t j = k == 0 ? tail : 0; j < b; ++j)
        if (std::count(options.stopTokenIds.begin(), options.stopTokenIds.end(),
                       tokens[row][j])) {
          running[size_t(row)] = false;
          stoppedNow.push_back(row);
          break;
        }
    }
    if (blocksDone * b - tail >= config.maxTokens ||
        std::none_of(running.begin(), running.end(), [](bool r) { return r; }))
      break;
    // A stopped candidate keeps its row (shapes stay fixed) but is never
    // masked again, so it neither changes nor delays anyone's steps.
    for (int64_t row : stoppedNow)
      runningRows[row] = false;
  }

  if (uncommitted.defined())
    denoiser.commit(uncommitted);

  // One transfer back at the end; cut each answer at its first stop id.
  torch::Tensor tokensHost = answer.cpu(), stepsHost = unmaskStep.cpu(),
                probsHost = unmaskProb.cpu();
  auto tokens = tokensHost.accessor<int64_t, 2>();
  auto steps = stepsHost.accessor<int64_t, 2>();
  auto probs = probsHost.accessor<float, 2>();
  const int64_t generated = std::min(blocksDone * b - tail, config.maxTokens);
  std::vector<Candidate> candidates(static_cast<size_t>(n));
  for (int64_t row = 0; row < n; ++row) {
    Candidate &c = candidates[size_t(row)];
    int64_t last = tail - 1;
    for (int64_t j = tail; j < tail + generated; ++j) {
      c.tokens.push_back(int32_t(tokens[row][j]));
      c.unmaskStep.push_back(int32_t(steps[row][j]));
      c.probability.push_back(probs[row][j]);
      last = j;
      if (std::count(options.stopTokenIds.begin(), options.stopTokenIds.end(),
                     tokens[row][j])) {
        c.stopped = true;
        break;
      }
    }
    // The decoded rest of the answer's last block (the trainer's context).
    const int64_t blockEnd = std::min((last / b + 1) * b, blocksDone * b);
    for (int64_t j = last + 1; j < blockEnd && last >= tail; ++j) {
      c.trailingTokens.push_back(int32_t(tokens[row][j]));
      c.trailingSteps.push_back(int32_t(steps[row][j]));
    }
  }
  return candidates;
}

} // namespace dice
