//===- TokenLayout.h - training rows of block-diffusion models --*- C++ -*-===//
//
// A training row lays several sequences side by side (packing), and for each
// sequence its clean tokens followed by noisy copies of some of its blocks:
//
//   clean  x0: p p p p | p p a a | a a a a | a a a a      block-causal
//   copy 0   :           p p M a | M M a M | M a M M      each block sees
//   copy 1   :           p p a a | a M a a |              itself and the
//                                                         clean blocks before
//
// BD3-LM (SFT) uses one copy, masked at random; TraceRL uses one copy per
// decoding round of a rollout, masked where the sampler had not yet decoded,
// so every token is scored in the context it was decoded in. A query sees a
// key only within its own sequence: clean sees clean of blocks up to its own;
// a copy's block sees the same copy's same block (bidirectionally) and clean
// blocks strictly before it. Positions repeat across copies (RoPE sees the
// true position).
//
//===----------------------------------------------------------------------===//

#ifndef DICE_TRAIN_TOKENLAYOUT_H
#define DICE_TRAIN_TOKENLAYOUT_H

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace dice {

/// A token slot's role: clean (kClean) or noisy copy number >= 0.
inline constexpr int64_t kClean = -1;

struct TrainingRow {
  std::vector<int64_t> ids;       ///< token at each slot (the mask id where masked)
  std::vector<int64_t> positions; ///< position within its sequence
  std::vector<int64_t> blocks;    ///< position / block size
  std::vector<int64_t> copies;    ///< kClean or the copy number
  std::vector<int64_t> sequences; ///< which packed sequence; -1 padding
  std::vector<int64_t> targets;   ///< token to predict here, or -1
  std::vector<float> weights;     ///< the target's loss weight
  std::vector<int64_t> tags;      ///< caller's index of the target (answer token)

  int64_t size() const { return int64_t(ids.size()); }
  void push(int64_t id, int64_t position, int64_t blockSize, int64_t copy,
            int64_t sequence, int64_t target = -1, float weight = 0,
            int64_t tag = -1);
};

/// Rows padded to one length, as tensors on `device`.
struct TrainingBatch {
  torch::Tensor ids;       // [N, T] int64
  torch::Tensor positions; // [N, T] int64
  torch::Tensor allowed;   // [N, T, T] bool
  torch::Tensor targetRow, targetSlot; // [K] int64: where targets are
  torch::Tensor targets;   // [K] int64
  torch::Tensor weights;   // [K] float32
  torch::Tensor tags;      // [K] int64
};

/// The attention mask of one row ([T, T] bool), by the rules above; padding
/// slots see only themselves.
torch::Tensor attentionMask(const TrainingRow &row, torch::Device device = torch::kCPU);

/// Items of `slots` each, in order, into rows of at most `capacity` slots:
/// the item indices of each row (an item larger than `capacity` gets a row
/// of its own).
std::vector<std::vector<size_t>> packInOrder(const std::vector<int64_t> &slots,
                                             int64_t capacity);

/// packInOrder's rows, longest first: a micro-batch pads its rows to its
/// longest one and attends over all of its slots, so rows of like length
/// side by side waste the fewest slots. The order of rows within one step
/// does not change the step's gradient, which is their sum.
std::vector<std::vector<size_t>> packLongestFirst(const std::vector<int64_t> &slots,
                                                  int64_t capacity);

TrainingBatch makeBatch(const std::vector<TrainingRow> &rows, int64_t padId,
                        torch::Device device);

} // namespace dice

#endif // DICE_TRAIN_TOKENLAYOUT_H
