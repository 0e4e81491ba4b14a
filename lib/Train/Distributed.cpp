//===- Distributed.cpp - ranks of a torchrun job --------------------------===//

#include "dice/Train/Distributed.h"

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#if __has_include(<nccl.h>) && defined(DICE_HAVE_NCCL)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#define DICE_USE_NCCL 1
#else
#define DICE_USE_NCCL 0
#endif

#include <cstdlib>

namespace dice {

struct Distributed::Group {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::Backend> backend;
  std::string name;
};

namespace {

std::optional<long> envNumber(const char *name) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return std::nullopt;
  char *end = nullptr;
  long n = std::strtol(v, &end, 10);
  if (*end)
    return std::nullopt;
  return n;
}

} // namespace

Distributed::~Distributed() = default;

std::string Distributed::backendName() const {
  return group ? group->name : "none";
}

Result<std::unique_ptr<Distributed>>
Distributed::fromEnvironment(torch::Device device) {
  std::unique_ptr<Distributed> d(new Distributed());
  std::optional<long> world = envNumber("WORLD_SIZE"), rank = envNumber("RANK"),
                      local = envNumber("LOCAL_RANK");
  if (!world || *world <= 1)
    return d;
  if (!rank || *rank < 0 || *rank >= *world)
    return Error("", 0, 0, "RANK", "must be set to a rank below WORLD_SIZE (" +
                                       std::to_string(*world) + ") under torchrun");
  const char *addr = std::getenv("MASTER_ADDR");
  std::optional<long> port = envNumber("MASTER_PORT");
  if (!addr || !port)
    return Error("", 0, 0, "MASTER_ADDR", "MASTER_ADDR and MASTER_PORT must be set "
                                          "under torchrun");
  d->world = int(*world);
  d->rank_ = int(*rank);
  d->local = int(local.value_or(0));
  try {
    c10d::TCPStoreOptions options;
    options.port = uint16_t(*port);
    // torchrun's agent already serves the store on MASTER_PORT (its
    // TORCHELASTIC_USE_AGENT_STORE); started by hand, rank 0 serves it.
    const char *agent = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
    options.isServer = d->rank_ == 0 && !(agent && std::string(agent) == "True");
    options.numWorkers = size_t(d->world);
    options.waitWorkers = false;
    options.timeout = std::chrono::seconds(300);
    auto store = c10::make_intrusive<c10d::TCPStore>(addr, options);
    // A prefix of our own: the agent's store holds torchrun's keys too.
    auto prefixed = c10::make_intrusive<c10d::PrefixStore>("dice-train", store);
    d->group = std::make_unique<Group>();
    d->group->store = prefixed;
    if (device.is_cuda()) {
#if DICE_USE_NCCL
      auto opts = c10d::ProcessGroupNCCL::Options::create();
      d->group->backend = c10::make_intrusive<c10d::ProcessGroupNCCL>(
          prefixed, d->rank_, d->world, opts);
      d->group->name = "nccl";
#else
      return Error("this dice-train was built without NCCL: it cannot train on "
                   "several GPUs (rebuild where nccl.h is found)");
#endif
    } else {
      auto opts = c10d::ProcessGroupGloo::Options::create();
      opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      d->group->backend = c10::make_intrusive<c10d::ProcessGroupGloo>(
          prefixed, d->rank_, d->world, opts);
      d->group->name = "gloo";
    }
  } catch (const std::exception &e) {
    return Error(std::string("cannot join the torchrun job: ") + e.what());
  }
  return d;
}

void Distributed::allReduceSum(std::vector<torch::Tensor> tensors,
                               size_t bucketBytes) {
  if (!group)
    return;
  size_t start = 0;
  while (start < tensors.size()) {
    size_t end = start, bytes = 0;
    while (end < tensors.size() &&
           (end == start || bytes + tensors[end].nbytes() <= bucketBytes))
      bytes += tensors[end++].nbytes();
    std::vector<torch::Tensor> flat;
    for (size_t i = start; i < end; ++i)
      flat.push_back(tensors[i].reshape(-1));
    std::vector<torch::Tensor> bucket = {torch::cat(flat)};
    group->backend->allreduce(bucket)->wait();
    int64_t offset = 0;
    for (size_t i = start; i < end; ++i) {
      int64_t n = tensors[i].numel();
      tensors[i].copy_(bucket[0].narrow(0, offset, n).view_as(tensors[i]));
      offset += n;
    }
    start = end;
  }
}

void Distributed::broadcast(torch::Tensor &tensor, int root) {
  if (!group)
    return;
  std::vector<torch::Tensor> list = {tensor};
  c10d::BroadcastOptions opts;
  opts.rootRank = root;
  group->backend->broadcast(list, opts)->wait();
}

void Distributed::barrier() {
  if (!group)
    return;
  torch::Tensor t = torch::zeros({1}, group->name == "nccl"
                                          ? torch::TensorOptions().device(torch::kCUDA)
                                          : torch::TensorOptions());
  std::vector<torch::Tensor> list = {t};
  group->backend->allreduce(list)->wait();
}

} // namespace dice
