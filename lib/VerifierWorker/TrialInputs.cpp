//===- TrialInputs.cpp - seeded inputs of the trials ----------------------===//
//
// The inputs of each trial: a seeded distribution per trial, generated on
// the CPU so the values do not depend on the device, and the copies that
// show whether the candidate wrote its inputs or read them on the host.
//
//===----------------------------------------------------------------------===//

#include "CheckSteps.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

namespace dice {
namespace dynamic_check {
namespace {

/// One input, generated on the CPU (the same values whatever the device)
/// and moved to `device`.
at::Tensor makeInput(const TensorType &type, Distribution distribution,
                     at::Generator &generator, c10::Device device) {
  at::IntArrayRef shape(type.shape);
  auto f32 = at::TensorOptions().dtype(at::kFloat);
  auto i64 = at::TensorOptions().dtype(at::kLong);
  at::Tensor values;
  if (isFloatingPoint(type.dtype)) {
    switch (distribution) {
    case Distribution::Normal:
      values = at::randn(shape, generator, f32);
      break;
    case Distribution::Uniform:
      values = at::rand(shape, generator, f32) * 2 - 1;
      break;
    case Distribution::HeavyTailed:
      values = (at::randn(shape, generator, f32) /
                at::sqrt(at::rand(shape, generator, f32) * 0.99 + 0.01))
                   .clamp(-100, 100);
      break;
    case Distribution::AwayFromZero:
      values = at::rand(shape, generator, f32) + 1;
      break;
    }
  } else if (type.dtype == DType::Bool) {
    values = at::randint(0, 2, shape, generator, i64);
  } else {
    bool unsignedType = type.dtype == DType::UInt8;
    if (distribution == Distribution::AwayFromZero)
      values = at::randint(1, 64, shape, generator, i64);
    else
      values = at::randint(unsignedType ? 0 : -64, 64, shape, generator, i64);
  }
  return values.to(toScalarType(type.dtype)).to(device).contiguous();
}

} // namespace

const char *distributionName(Distribution distribution) {
  switch (distribution) {
  case Distribution::Normal:
    return "normal(0, 1)";
  case Distribution::Uniform:
    return "uniform(-1, 1)";
  case Distribution::HeavyTailed:
    return "heavy-tailed (normal / sqrt(uniform(0.01, 1)), clipped to +-100)";
  case Distribution::AwayFromZero:
    return "uniform(1, 2)";
  }
  return "";
}

Distribution distributionOfTrial(int64_t trial) {
  return static_cast<Distribution>(trial % 4);
}

uint64_t seedOfTrial(uint64_t seed, int64_t trial) {
  return seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(trial) + 1;
}

std::vector<at::Tensor> firstTrialInputs(const ReferenceProgram &program,
                                         uint64_t seed, c10::Device device) {
  return makeInputs(program, distributionOfTrial(0), seedOfTrial(seed, 0),
                    device);
}

std::vector<at::Tensor> makeInputs(const ReferenceProgram &program,
                                   Distribution distribution, uint64_t seed,
                                   c10::Device device) {
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  std::vector<at::Tensor> inputs;
  for (const TensorType &type : program.inputs)
    inputs.push_back(makeInput(type, distribution, generator, device));
  return inputs;
}

bool bitIdentical(const at::Tensor &a, const at::Tensor &b) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type() ||
      a.device() != b.device())
    return false;
  if (a.numel() == 0)
    return true;
  auto bytes = [](const at::Tensor &t) {
    return t.contiguous().reshape({-1}).view(at::kByte);
  };
  return at::equal(bytes(a), bytes(b));
}

/// A CPU copy of `tensor` whose memory the host cannot read: in the CPU
/// smoke run the inputs stand for device memory, so a candidate that
/// dereferences an input on the host faults here as it would on a GPU.
at::Tensor unreadableCopy(const at::Tensor &tensor) {
  at::Tensor source = tensor.contiguous();
  size_t bytes = static_cast<size_t>(source.numel()) * source.element_size();
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t length = std::max(page, (bytes + page - 1) / page * page);
  void *memory = mmap(nullptr, length, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED)
    throw std::runtime_error(std::string("mmap: ") + std::strerror(errno));
  if (bytes)
    std::memcpy(memory, source.data_ptr(), bytes);
  mprotect(memory, length, PROT_NONE);
  return at::from_blob(
      memory, source.sizes(), [length](void *p) { munmap(p, length); },
      source.options());
}

} // namespace dynamic_check
} // namespace dice
