//===- BlockDiffusionSampler.h - block-diffusion decoding -------*- C++ -*-===//
//
// Decodes a batch of candidates block by block: each block starts as masks
// and is denoised for a few steps against the KV cache of everything before
// it, unmasking the most confident positions per step (see docs/model.md).
// The sampler sees the model only through `Denoiser`, so tests can feed it
// known logits. LibTorch-built code only.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_MODEL_BLOCKDIFFUSIONSAMPLER_H
#define DICE_MODEL_BLOCKDIFFUSIONSAMPLER_H

#include "dice/Config/Config.h"
#include "dice/Infill/InfillEngine.h"
#include "dice/Model/Transformer.h"
#include "dice/Support/Result.h"

#include <torch/torch.h>

#include <optional>
#include <utility>
#include <vector>

namespace dice {

/// What the sampler needs from a model: logits of a block against a stored
/// prefix, and a way to store a finished block.
class Denoiser {
public:
  virtual ~Denoiser() = default;

  virtual torch::Device device() const = 0;

  /// Starts `batch` sequences sharing `prefix` ([P'], int64, P' a multiple
  /// of `blockSize`, possibly empty) that will grow to at most `capacity`
  /// positions; stores the prefix.
  virtual void start(const torch::Tensor &prefix, int64_t batch,
                     int64_t capacity, int64_t blockSize) = 0;

  /// Logits [N, B, V] of `block` ([N, B]) at the next B positions, the block
  /// attending to the stored prefix and to itself; stores nothing.
  virtual torch::Tensor denoise(const torch::Tensor &block) = 0;

  /// Stores `block` ([N, B]): the prefix grows by B.
  virtual void commit(const torch::Tensor &block) = 0;

  /// commit(done) then denoise(next): the sampler's step after a finished
  /// block, which a model may run as one forward.
  virtual torch::Tensor commitAndDenoise(const torch::Tensor &done,
                                         const torch::Tensor &next) {
    commit(done);
    return denoise(next);
  }
};

/// The transformer with its KV cache as a Denoiser: block steps run on
/// fixed shapes (CUDA graphs on a GPU), and a finished block is stored in
/// the same forward as the next block's first step. The logits `denoise`
/// returns are valid until the next call.
class TransformerDenoiser : public Denoiser {
public:
  explicit TransformerDenoiser(Transformer &model) : model(model) {}

  torch::Device device() const override { return model.device(); }
  void start(const torch::Tensor &prefix, int64_t batch, int64_t capacity,
             int64_t blockSize) override;
  torch::Tensor denoise(const torch::Tensor &block) override;
  void commit(const torch::Tensor &block) override;
  torch::Tensor commitAndDenoise(const torch::Tensor &done,
                                 const torch::Tensor &next) override;

private:
  Transformer &model;
  KVCache cache; // reused across calls while big enough
};

/// x0 and its probability per position. `logits` [..., V] (any float type);
/// temperature 0 is greedy (probability under the filtered distribution at
/// temperature 1); top-k 0 and top-p 1 disable those filters. Returns
/// tokens [...] int64 and probabilities [...] float32.
std::pair<torch::Tensor, torch::Tensor>
sampleTokens(const torch::Tensor &logits, double temperature, int64_t topK,
             double topP, std::optional<torch::Generator> generator);

/// How many positions step s of `steps` unmasks in a block of `blockLength`:
/// blockLength / steps each, the remainder spread over the first steps.
std::vector<int64_t> unmaskSchedule(int64_t blockLength, int64_t steps);

/// The positions ([N, B] bool) a step unmasks, given the positions still
/// masked ([N, B] bool), each position's confidence ([N, B] float) and the
/// scheduled count `n`. Never selects an unmasked position; ties in
/// confidence go to the leftmost position.
torch::Tensor selectUnmasked(Remasking rule, const torch::Tensor &masked,
                             const torch::Tensor &confidence, int64_t n,
                             double threshold);

struct SamplerOptions {
  int64_t maskTokenId = 151669;
  std::vector<int64_t> stopTokenIds = {151645, 151643};
  /// Every call starts its random stream from this seed: the same seed,
  /// prompt and config give the same candidates, whatever came before.
  uint64_t seed = 0;
};

class BlockDiffusionSampler {
public:
  BlockDiffusionSampler(Denoiser &denoiser, SamplerOptions options);

  /// Decodes `n` candidates of one prompt together. Each candidate's tokens
  /// end at its first stop id (kept) or after `maxTokens`; `unmaskStep` counts
  /// that candidate's denoising steps over the whole answer. `text` is left
  /// empty. Never throws.
  Result<std::vector<Candidate>>
  generateCandidates(const std::vector<int32_t> &promptIds, int n,
                     const SamplingConfig &config);

  void setSeed(uint64_t seed) { options.seed = seed; }

private:
  std::vector<Candidate> generate(const std::vector<int32_t> &promptIds, int n,
                                  const SamplingConfig &config);

  Denoiser &denoiser;
  SamplerOptions options;
};

} // namespace dice

#endif // DICE_MODEL_BLOCKDIFFUSIONSAMPLER_H
