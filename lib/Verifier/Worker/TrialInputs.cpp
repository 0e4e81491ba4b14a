//===- TrialInputs.cpp - seeded inputs of the trials ----------------------===//
//
// The inputs of each trial: a seeded distribution per trial, computed on
// the device from a counter-based generator (a hash of each element's
// index), so the values do not depend on the device and cost no host work
// or transfer; and the copies that show whether the candidate wrote its
// inputs or read them on the host.
//
//===----------------------------------------------------------------------===//

#include "CheckSteps.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

namespace dice {
namespace dynamic_check {
namespace {

/// A 32-bit integer hash (Wellons' lowbias32) of every element of `x`,
/// which holds values in [0, 2^32) as int64. Products are split so that no
/// intermediate leaves int64: the same values on every device.
at::Tensor hash32(at::Tensor x) {
  const int64_t mask32 = 0xFFFFFFFFll;
  auto mulmod32 = [&](const at::Tensor &v, int64_t c) {
    at::Tensor low = v * (c & 0xFFFF);
    at::Tensor high = at::bitwise_and(v * (c >> 16), 0xFFFF);
    return at::bitwise_and(low + at::bitwise_left_shift(high, 16), mask32);
  };
  x = at::bitwise_xor(x, at::bitwise_right_shift(x, 16));
  x = mulmod32(x, 0x7feb352dll);
  x = at::bitwise_xor(x, at::bitwise_right_shift(x, 15));
  x = mulmod32(x, 0x846ca68bll);
  return at::bitwise_xor(x, at::bitwise_right_shift(x, 16));
}

/// Uniform values in (0, 1) as float64, one per element of `shape`: a
/// counter-based generator (the hash of the element's index under `key`),
/// computed where the input lives. No values cross from the host, and
/// they are the same on every device and for any thread count.
at::Tensor uniform(at::IntArrayRef shape, uint64_t key, c10::Device device) {
  int64_t n = 1;
  for (int64_t size : shape)
    n *= size;
  auto i64 = at::TensorOptions().dtype(at::kLong).device(device);
  at::Tensor index = at::arange(n, i64);
  int64_t low = static_cast<int64_t>(key & 0xFFFFFFFFull);
  int64_t high = static_cast<int64_t>(key >> 32);
  // Two rounds keyed by both halves of the key: streams of different
  // keys do not overlap by a shift of the index.
  at::Tensor x = hash32(at::bitwise_xor(at::bitwise_and(index, 0xFFFFFFFFll), low));
  x = hash32(at::bitwise_and(
      at::bitwise_xor(x + at::bitwise_right_shift(index, 32), high), 0xFFFFFFFFll));
  return ((x.to(at::kDouble) + 0.5) / 4294967296.0).reshape(shape);
}

/// Normal(0, 1) values (Box-Muller over two uniform streams).
at::Tensor normal(at::IntArrayRef shape, uint64_t key, c10::Device device) {
  at::Tensor u1 = uniform(shape, key, device);
  at::Tensor u2 = uniform(shape, key ^ 0x5851F42D4C957F2Dull, device);
  return at::sqrt(-2.0 * at::log(u1)) * at::cos(6.283185307179586 * u2);
}

/// One input: stream `key` (the trial's seed and the input's position)
/// in the trial's distribution, computed in float64 and rounded once;
/// integer indices (`indexBound` > 0) in [0, indexBound) whatever the trial.
at::Tensor makeInput(const TensorType &type, Distribution distribution,
                     uint64_t key, c10::Device device, int64_t indexBound) {
  at::IntArrayRef shape(type.shape);
  at::Tensor values;
  if (isFloatingPoint(type.dtype)) {
    switch (distribution) {
    case Distribution::Normal:
      values = normal(shape, key, device);
      break;
    case Distribution::Uniform:
      values = uniform(shape, key, device) * 2 - 1;
      break;
    case Distribution::HeavyTailed:
      values = (normal(shape, key, device) /
                at::sqrt(uniform(shape, ~key, device) * 0.99 + 0.01))
                   .clamp(-100, 100);
      break;
    case Distribution::AwayFromZero:
      values = uniform(shape, key, device) + 1;
      break;
    }
  } else {
    // Integers in [lo, hi): bools take 0 and 1.
    int64_t lo = -64, hi = 64;
    if (type.dtype == DType::Bool)
      lo = 0, hi = 2;
    else if (distribution == Distribution::AwayFromZero)
      lo = 1;
    else if (type.dtype == DType::UInt8)
      lo = 0;
    if (indexBound > 0)
      lo = 0, hi = indexBound;
    values = at::floor(uniform(shape, key, device) * double(hi - lo)).to(at::kLong) + lo;
  }
  return values.to(toScalarType(type.dtype)).contiguous();
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
  std::vector<at::Tensor> inputs;
  std::vector<int64_t> indexBounds = program.indexBounds();
  for (size_t i = 0; i < program.inputs.size(); ++i)
    inputs.push_back(makeInput(program.inputs[i], distribution,
                               seed * 0x9E3779B97F4A7C15ull + i, device, indexBounds[i]));
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
