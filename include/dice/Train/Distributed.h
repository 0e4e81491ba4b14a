//===- Distributed.h - ranks of a torchrun job ------------------*- C++ -*-===//
//
// dice-train under `torchrun --nproc-per-node N --no-python dice-train ...`:
// the rank, world size and rendezvous come from torchrun's environment
// (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), the collectives
// from c10d (NCCL between GPUs, Gloo between CPU processes). Run alone, the
// same calls are no-ops over a world of one.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_TRAIN_DISTRIBUTED_H
#define DICE_TRAIN_DISTRIBUTED_H

#include "dice/Support/Result.h"

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

namespace dice {

class Distributed {
public:
  /// From torchrun's environment; a world of one without it. `device`
  /// decides the backend (NCCL for CUDA tensors, Gloo for CPU ones).
  static Result<std::unique_ptr<Distributed>> fromEnvironment(torch::Device device);
  ~Distributed();

  int rank() const { return rank_; }
  int worldSize() const { return world; }
  int localRank() const { return local; }
  bool isMain() const { return rank_ == 0; }
  std::string backendName() const;

  /// Sums `tensors` over ranks in place, flattened into buckets of at most
  /// `bucketBytes` (one collective each instead of one per tensor).
  void allReduceSum(std::vector<torch::Tensor> tensors, size_t bucketBytes);
  /// Copies `tensor` from rank `root` to every rank, in place.
  void broadcast(torch::Tensor &tensor, int root);
  void barrier();

private:
  Distributed() = default;
  struct Group;
  std::unique_ptr<Group> group;
  int rank_ = 0, world = 1, local = 0;
};

} // namespace dice

#endif // DICE_TRAIN_DISTRIBUTED_H
