//===- TokenLayout.cpp - training rows of block-diffusion models ----------===//

#include "dice/Train/TokenLayout.h"

#include <algorithm>
#include <numeric>

namespace dice {

void TrainingRow::push(int64_t id, int64_t position, int64_t blockSize,
                       int64_t copy, int64_t sequence, int64_t target,
                       float weight, int64_t tag) {
  ids.push_back(id);
  positions.push_back(position);
  blocks.push_back(position / blockSize);
  copies.push_back(copy);
  sequences.push_back(sequence);
  targets.push_back(target);
  weights.push_back(weight);
  tags.push_back(tag);
}

torch::Tensor attentionMask(const TrainingRow &row, torch::Device device) {
  // Built where it is used: a packed row's mask has T^2 entries.
  auto i64 = [&](const std::vector<int64_t> &v) {
    return torch::tensor(v, torch::kInt64).to(device);
  };
  const int64_t t = row.size();
  torch::Tensor block = i64(row.blocks), copy = i64(row.copies),
                sequence = i64(row.sequences);
  torch::Tensor qb = block.unsqueeze(1), kb = block.unsqueeze(0);
  torch::Tensor qc = copy.unsqueeze(1), kc = copy.unsqueeze(0);
  torch::Tensor sameSequence =
      (sequence.unsqueeze(1) == sequence.unsqueeze(0)) & (sequence.unsqueeze(1) >= 0);
  torch::Tensor qClean = qc == kClean, kClean_ = kc == kClean;
  torch::Tensor cleanToClean = qClean & kClean_ & (kb <= qb);
  torch::Tensor withinBlock = ~qClean & (kc == qc) & (kb == qb);
  torch::Tensor noisyToClean = ~qClean & kClean_ & (kb < qb);
  torch::Tensor allowed = sameSequence & (cleanToClean | withinBlock | noisyToClean);
  // Every slot sees itself (padding included), so no softmax row is empty.
  return allowed | torch::eye(t, torch::TensorOptions().dtype(torch::kBool).device(device));
}

std::vector<std::vector<size_t>> packInOrder(const std::vector<int64_t> &slots,
                                             int64_t capacity) {
  std::vector<std::vector<size_t>> rows;
  int64_t used = capacity;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (rows.empty() || used + slots[i] > capacity) {
      rows.emplace_back();
      used = 0;
    }
    rows.back().push_back(i);
    used += slots[i];
  }
  return rows;
}

std::vector<std::vector<size_t>> packLongestFirst(const std::vector<int64_t> &slots,
                                                  int64_t capacity) {
  std::vector<std::vector<size_t>> rows = packInOrder(slots, capacity);
  std::vector<int64_t> length(rows.size(), 0);
  for (size_t r = 0; r < rows.size(); ++r)
    for (size_t i : rows[r])
      length[r] += slots[i];
  std::vector<size_t> order(rows.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return length[a] > length[b]; });
  std::vector<std::vector<size_t>> sorted;
  for (size_t r : order)
    sorted.push_back(std::move(rows[r]));
  return sorted;
}

TrainingBatch makeBatch(const std::vector<TrainingRow> &rows, int64_t padId,
                        torch::Device device) {
  int64_t n = int64_t(rows.size()), t = 0;
  for (const TrainingRow &r : rows)
    t = std::max(t, r.size());
  torch::Tensor ids = torch::full({n, t}, padId, torch::kInt64);
  torch::Tensor positions = torch::zeros({n, t}, torch::kInt64);
  torch::Tensor allowed =
      torch::zeros({n, t, t}, torch::TensorOptions().dtype(torch::kBool).device(device));
  std::vector<int64_t> targetRow, targetSlot, targets, tags;
  std::vector<float> weights;
  for (int64_t r = 0; r < n; ++r) {
    TrainingRow row = rows[size_t(r)];
    // Pad to the batch's length: padding is a sequence of its own (-1).
    for (int64_t s = row.size(); s < t; ++s)
      row.push(padId, 0, 1, kClean, -1);
    ids[r] = torch::tensor(row.ids, torch::kInt64);
    positions[r] = torch::tensor(row.positions, torch::kInt64);
    allowed[r] = attentionMask(row, device);
    for (int64_t s = 0; s < t; ++s)
      if (row.targets[size_t(s)] >= 0) {
        targetRow.push_back(r);
        targetSlot.push_back(s);
        targets.push_back(row.targets[size_t(s)]);
        weights.push_back(row.weights[size_t(s)]);
        tags.push_back(row.tags[size_t(s)]);
      }
  }
  auto i64 = [&](const std::vector<int64_t> &v) {
    return torch::tensor(v, torch::kInt64).to(device);
  };
  TrainingBatch b;
  b.ids = ids.to(device);
  b.positions = positions.to(device);
  b.allowed = allowed;
  b.targetRow = i64(targetRow);
  b.targetSlot = i64(targetSlot);
  b.targets = i64(targets);
  b.weights = torch::tensor(weights, torch::kFloat32).to(device);
  b.tags = i64(tags);
  return b;
}

} // namespace dice
