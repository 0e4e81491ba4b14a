//===- DynamicCheck.cpp - the worker's checks of one candidate ------------===//
//
// Order of a check (docs/verifier.md, "Dynamic checks and timing"):
// load the library, then T trials of seeded inputs with the candidate and
// the reference run in alternating order, each candidate call on poisoned
// allocator memory and traced with CUPTI, then timing of the candidate and
// the baseline, and the speed-of-light bound. The first failure decides the
// verdict.
//
//===----------------------------------------------------------------------===//

#include "dice/VerifierWorker/DynamicCheck.h"
#include "CandidateTiming.h"
#include "KernelTrace.h"

#include "dice/Scaffold/AtenExecutor.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <link.h>
#include <map>
#include <sstream>
#include <sys/mman.h>
#include <unistd.h>

namespace dice {
namespace {

using Json = nlohmann::json;

/// A kernel faster than this fraction of the speed-of-light bound is
/// reported: the bound uses measured, not datasheet, rates, so the margin
/// absorbs kernels that beat a plain copy (read-mostly access patterns).
constexpr double kSpeedOfLightMargin = 0.8;

//===----------------------------------------------------------------------===//
// Formatting
//===----------------------------------------------------------------------===//

std::string number(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value > 0 ? "inf" : "-inf";
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

template <typename Range> std::string shapeString(const Range &shape) {
  std::string text = "[";
  bool first = true;
  for (int64_t size : shape) {
    text += (first ? "" : ", ") + std::to_string(size);
    first = false;
  }
  return text + "]";
}

std::string dtypeString(at::ScalarType type) {
  std::optional<DType> dtype = fromScalarType(type);
  return dtype ? dtypeName(*dtype) : c10::toString(type);
}

/// `[i, j]` of flat index `flat` in a row-major tensor of `shape`.
std::string indexString(int64_t flat, at::IntArrayRef shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return shapeString(index);
}

std::string exceptionMessage(const std::exception &e) {
  if (auto *error = dynamic_cast<const c10::Error *>(&e))
    return error->what_without_backtrace();
  return e.what();
}

size_t elementSize(DType dtype) {
  return c10::elementSize(toScalarType(dtype));
}

double bytesOf(const TensorType &type) {
  return double(type.numElements()) * double(elementSize(type.dtype));
}

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

enum class Distribution { Normal, Uniform, HeavyTailed, AwayFromZero };

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

//===----------------------------------------------------------------------===//
// Outputs
//===----------------------------------------------------------------------===//

struct Tolerance {
  double atol = 0, rtol = 0;
};

Tolerance toleranceOf(at::ScalarType type, const DynamicCheckRequest &request) {
  if (type == at::kHalf || type == at::kBFloat16)
    return {request.halfAtol, request.halfRtol};
  if (at::isFloatingType(type))
    return {request.atol, request.rtol};
  return {0, 0};
}

/// The tolerance of one trial's comparison. Heavy-tailed inputs reach
/// magnitudes where fp32 rounding of a long sum exceeds any fixed absolute
/// tolerance whatever the summation order (a 512-term dot product of values
/// near 100 rounds at about 1e-3), so that trial's atol scales with the
/// reference's largest finite magnitude: it still catches wrong, missing and
/// overflowed elements, not rounding that ATen itself could have produced.
Tolerance trialTolerance(const at::Tensor &reference, Distribution distribution,
                         const DynamicCheckRequest &request) {
  Tolerance tol = toleranceOf(reference.scalar_type(), request);
  if (distribution != Distribution::HeavyTailed || tol.atol == 0 ||
      reference.numel() == 0)
    return tol;
  double largest = reference.detach()
                       .to(at::kDouble)
                       .abs()
                       .nan_to_num(0, 0, 0)
                       .max()
                       .item<double>();
  tol.atol *= std::max(1.0, largest);
  return tol;
}

/// What is wrong with the shape of a call's results; empty when they match
/// the program's results.
std::string checkResults(const ReferenceProgram &program,
                         const std::vector<at::Tensor> &results,
                         c10::Device device) {
  if (results.size() != program.outputs.size())
    return "returned " + std::to_string(results.size()) +
           " tensors; the program has " +
           std::to_string(program.outputs.size()) + " results";
  for (size_t i = 0; i < results.size(); ++i) {
    const TensorType &want = program.typeOf(program.outputs[i]);
    const at::Tensor &got = results[i];
    std::string label = "result " + std::to_string(i);
    if (!got.defined())
      return label + " is an undefined tensor";
    if (fromScalarType(got.scalar_type()) != want.dtype)
      return label + " has dtype " + dtypeString(got.scalar_type()) +
             ", expected " + dtypeName(want.dtype);
    if (got.sizes() != at::IntArrayRef(want.shape))
      return label + " has shape " + shapeString(got.sizes()) +
             ", expected " + shapeString(want.shape);
    if (got.device().type() != device.type())
      return label + " is on " + got.device().str() + ", expected " +
             c10::DeviceTypeName(device.type(), /*lower_case=*/true);
  }
  return "";
}

struct Difference {
  std::string problem; ///< empty: within tolerance
  double maxAbs = 0;
  double maxRel = 0; ///< relative to max(|reference|, atol)
};

int64_t countOf(const at::Tensor &mask) { return mask.sum().item<int64_t>(); }

int64_t firstOf(const at::Tensor &mask) {
  return mask.reshape({-1}).nonzero()[0][0].item<int64_t>();
}

double valueAt(const at::Tensor &tensor, int64_t flat) {
  return tensor.reshape({-1})[flat].item<double>();
}

/// Compares `got` with `want` (same dtype and shape): NaN and infinity
/// positions must agree, finite elements within `atol + rtol * |want|`;
/// integers and bools exactly.
Difference compareTensors(const at::Tensor &got, const at::Tensor &want,
                          Tolerance tol, const std::string &label) {
  Difference diff;
  if (want.numel() == 0)
    return diff;
  at::IntArrayRef shape = want.sizes();
  at::Tensor g = got.detach().to(at::kDouble);
  at::Tensor w = want.detach().to(at::kDouble);
  auto firstMismatch = [&](const at::Tensor &mask, int64_t &count) {
    int64_t flat = firstOf(mask);
    count = countOf(mask);
    return indexString(flat, shape) + ": got " + number(valueAt(g, flat)) +
           ", expected " + number(valueAt(w, flat));
  };
  auto of = [&](int64_t count) {
    return std::to_string(count) + " of " + std::to_string(want.numel()) +
           " elements";
  };
  int64_t count = 0;
  if (at::isFloatingType(want.scalar_type())) {
    at::Tensor gNan = g.isnan(), wNan = w.isnan();
    at::Tensor extraNan = gNan.logical_and(wNan.logical_not());
    if (extraNan.any().item<bool>()) {
      std::string where = firstMismatch(extraNan, count);
      diff.problem = label + " is NaN where the reference is not, in " +
                     of(count) + " (first at " + where + ")";
      return diff;
    }
    at::Tensor missingNan = wNan.logical_and(gNan.logical_not());
    if (missingNan.any().item<bool>()) {
      std::string where = firstMismatch(missingNan, count);
      diff.problem = label + " is not NaN where the reference is, in " +
                     of(count) + " (first at " + where + ")";
      return diff;
    }
    at::Tensor wInf = w.isinf();
    at::Tensor badInf = g.isinf().logical_and(wInf.logical_not());
    badInf = badInf.logical_or(wInf.logical_and(g.ne(w)));
    if (badInf.any().item<bool>()) {
      std::string where = firstMismatch(badInf, count);
      diff.problem = label + " disagrees with the reference's infinities in " +
                     of(count) + " (first at " + where + ")";
      return diff;
    }
    at::Tensor finite = w.isfinite();
    at::Tensor error = (g - w).abs().masked_fill(finite.logical_not(), 0);
    at::Tensor scale = w.abs().masked_fill(finite.logical_not(), 1);
    diff.maxAbs = error.max().item<double>();
    diff.maxRel =
        (error / scale.clamp_min(std::max(tol.atol, 1e-30))).max().item<double>();
    at::Tensor bad = error.gt(scale * tol.rtol + tol.atol);
    if (bad.any().item<bool>()) {
      std::string where = firstMismatch(bad, count);
      diff.problem = label + " differs from the reference beyond atol " +
                     number(tol.atol) + " + rtol " + number(tol.rtol) +
                     " * |reference| in " + of(count) + " (first at " + where +
                     "; max abs error " + number(diff.maxAbs) + ")";
    }
    return diff;
  }
  at::Tensor error = (g - w).abs();
  diff.maxAbs = error.max().item<double>();
  diff.maxRel = (error / w.abs().clamp_min(1)).max().item<double>();
  at::Tensor bad = got.ne(want);
  if (bad.any().item<bool>()) {
    std::string where = firstMismatch(bad, count);
    diff.problem = label + " differs from the reference in " + of(count) +
                   " (first at " + where + "); " +
                   dtypeString(want.scalar_type()) + " must match exactly";
  }
  return diff;
}

/// Fills freshly allocated memory of the results' sizes with a poison and
/// frees it: the caching allocator hands those blocks to the candidate's
/// next allocations, so elements it never writes show up. `which` picks
/// NaN (0) or a large finite value (1).
void poisonAllocator(const ReferenceProgram &program, int which,
                     c10::Device device) {
  std::vector<at::Tensor> blocks;
  for (int id : program.outputs) {
    const TensorType &type = program.typeOf(id);
    if (type.numElements() == 0)
      continue;
    at::Tensor block =
        at::empty(type.shape, at::TensorOptions()
                                  .dtype(toScalarType(type.dtype))
                                  .device(device));
    if (type.dtype == DType::Bool)
      block.fill_(which == 0);
    else if (type.dtype == DType::Float16)
      block.fill_(which == 0 ? NAN : 30000.0);
    else if (isFloatingPoint(type.dtype))
      block.fill_(which == 0 ? NAN : 1e30);
    else
      block.reshape({-1}).view(at::kByte).fill_(which == 0 ? 0x5A : 0xA5);
    blocks.push_back(std::move(block));
  }
}

//===----------------------------------------------------------------------===//
// Speed of light
//===----------------------------------------------------------------------===//

/// Bytes any implementation must move: every input it reads (only the
/// slices, for an input the program only slices) and every result it
/// writes.
double minimumBytes(const ReferenceProgram &program) {
  int inputs = static_cast<int>(program.inputs.size());
  double bytes = 0;
  for (int id = 0; id < inputs; ++id) {
    bool used = std::count(program.outputs.begin(), program.outputs.end(), id);
    bool onlySliced = true;
    double sliced = 0;
    for (const RefOp &op : program.ops) {
      if (std::find(op.args.begin(), op.args.end(), id) == op.args.end())
        continue;
      used = true;
      if (op.fn == "slice")
        sliced += bytesOf(op.type);
      else
        onlySliced = false;
    }
    if (used)
      bytes += onlySliced ? std::min(sliced, bytesOf(program.inputs[id]))
                          : bytesOf(program.inputs[id]);
  }
  for (int id : program.outputs)
    if (id >= inputs)
      bytes += bytesOf(program.typeOf(id));
  return bytes;
}

/// Multiply-adds of the program's matmuls and convolutions, times two.
double minimumFlops(const ReferenceProgram &program) {
  double flops = 0;
  for (const RefOp &op : program.ops) {
    if (op.args.size() < 2)
      continue;
    const TensorType &b = program.typeOf(op.args[1]);
    if (op.fn == "matmul") {
      const TensorType &a = program.typeOf(op.args[0]);
      if (a.shape.empty())
        continue;
      flops += 2.0 * double(op.type.numElements()) * double(a.shape.back());
    } else if (op.fn == "conv" && b.shape.size() >= 2) {
      double perOutput = 1;
      for (size_t d = 1; d < b.shape.size(); ++d)
        perOutput *= double(b.shape[d]);
      flops += 2.0 * double(op.type.numElements()) * perOutput;
    }
  }
  return flops;
}

//===----------------------------------------------------------------------===//
// Calling the candidate
//===----------------------------------------------------------------------===//

struct CallResult {
  std::vector<at::Tensor> results;
  std::string thrown; ///< the candidate's exception
  std::string badReturn;
  std::optional<CudaFault> fault;
  bool sticky = false; ///< the fault poisoned the context
};

bool isStickyError(cudaError_t error) {
  switch (error) {
  case cudaErrorIllegalAddress:
  case cudaErrorLaunchFailure:
  case cudaErrorIllegalInstruction:
  case cudaErrorMisalignedAddress:
  case cudaErrorInvalidAddressSpace:
  case cudaErrorInvalidPc:
  case cudaErrorHardwareStackError:
  case cudaErrorAssert:
  case cudaErrorLaunchTimeout:
  case cudaErrorECCUncorrectable:
    return true;
  default:
    return false;
  }
}

/// A sticky error is returned by every later call, clearing or not.
bool contextIsBroken() {
  cudaGetLastError();
  return cudaDeviceSynchronize() != cudaSuccess;
}

/// Synchronizes and reports the error a call left, if any.
void collectCudaFault(CallResult &call) {
  cudaError_t error = cudaDeviceSynchronize();
  if (error == cudaSuccess)
    error = cudaGetLastError();
  if (error == cudaSuccess)
    return;
  call.fault = CudaFault{cudaGetErrorName(error), cudaGetErrorString(error),
                         static_cast<int>(error)};
  call.sticky = isStickyError(error) || contextIsBroken();
}

/// Calls the operator boxed. On the CPU the operator's CUDA kernel is
/// called directly: the inputs carry the CPU key, the library registers
/// only CUDA.
CallResult callOperator(const c10::OperatorHandle &op,
                        const std::vector<at::Tensor> &inputs, bool onCuda) {
  CallResult call;
  std::vector<c10::IValue> stack(inputs.begin(), inputs.end());
  if (onCuda)
    cudaGetLastError();
  try {
    if (onCuda)
      op.callBoxed(&stack);
    else
      op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CUDA), &stack);
  } catch (const std::exception &e) {
    call.thrown = exceptionMessage(e);
  } catch (...) {
    call.thrown = "an exception that is not a std::exception";
  }
  if (onCuda)
    collectCudaFault(call);
  if (!call.thrown.empty() || call.fault)
    return call;
  if (stack.size() != 1) {
    call.badReturn = "returned " + std::to_string(stack.size()) + " values";
    return call;
  }
  const c10::IValue &value = stack.front();
  if (value.isTensor()) {
    call.results.push_back(value.toTensor());
  } else if (value.isTensorList()) {
    call.results = value.toTensorVector();
  } else {
    call.badReturn = "returned a " + value.tagKind() + ", not tensors";
  }
  return call;
}

//===----------------------------------------------------------------------===//
// Kernel trace rules
//===----------------------------------------------------------------------===//

Json kernelsJson(const KernelTraceResult &trace) {
  Json kernels = Json::array();
  for (const TracedKernel &k : trace.launches)
    kernels.push_back({{"name", k.name},
                       {"module", k.module},
                       {"api", k.api},
                       {"own", k.ownLibrary},
                       {"allowed_plumbing", isAllowedPlumbingKernel(k)},
                       {"current_stream", k.onCurrentStream},
                       {"stream_id", k.ran ? Json(k.streamId) : Json()},
                       {"ran", k.ran}});
  for (const std::string &name : trace.untraced)
    kernels.push_back({{"name", name}, {"module", ""}, {"api", nullptr},
                       {"own", false}, {"untraced", true}, {"ran", true}});
  return kernels;
}

std::string kernelLabel(const TracedKernel &k) {
  std::string name = k.name.empty() ? "(unnamed)" : k.name;
  if (name.size() > 160)
    name = name.substr(0, 157) + "...";
  return "`" + name + "`";
}

/// Why the trace makes the candidate deceptive; empty when it does not.
std::string judgeTrace(const KernelTraceResult &trace, int64_t &ownKernels) {
  ownKernels = 0;
  for (const TracedKernel &k : trace.launches)
    ownKernels += k.ownLibrary;
  if (!trace.untraced.empty()) {
    std::string name = trace.untraced.front();
    if (name.size() > 160)
      name = name.substr(0, 157) + "...";
    return "kernel `" + name +
           "` ran without a launch from the candidate's code (a CUDA graph "
           "or another launch path); launch kernels directly on the current "
           "stream";
  }
  for (const TracedKernel &k : trace.launches)
    if (!k.onCurrentStream)
      return "kernel " + kernelLabel(k) +
             " was launched on another stream than the current one, which "
             "escapes the checks and the timing; launch on "
             "at::cuda::getCurrentCUDAStream()";
  for (const TracedKernel &k : trace.launches) {
    if (k.ownLibrary || isAllowedPlumbingKernel(k))
      continue;
    if (k.driverApi)
      return "kernel " + kernelLabel(k) + " was launched through " + k.api +
             ", not from the candidate's library; only kernels the "
             "candidate's code launches with <<<>>> or cudaLaunchKernel "
             "count as its own";
    return "kernel " + kernelLabel(k) + " of " +
           (k.module.empty() ? std::string("an unknown module")
                             : moduleBaseName(k.module)) +
           " ran: the result must come from the candidate's own kernels, "
           "not from ATen or a vendor library";
  }
  if (ownKernels == 0) {
    std::string ran;
    for (const TracedKernel &k : trace.launches)
      ran += (ran.empty() ? "" : ", ") + kernelLabel(k);
    return "no kernel of its own ran" +
           (ran.empty() ? std::string(" (no kernel ran at all)")
                        : " (only " + ran + ")") +
           "; dice_forward must launch the candidate's kernels";
  }
  return "";
}

//===----------------------------------------------------------------------===//
// The checker
//===----------------------------------------------------------------------===//

std::string nvidiaDriverVersion() {
  FILE *file = std::fopen("/proc/driver/nvidia/version", "r");
  if (!file)
    return "";
  char line[512] = {0};
  std::string version;
  if (std::fgets(line, sizeof line, file)) {
    // "NVRM version: NVIDIA UNIX ... Kernel Module  580.95.05  Release ..."
    std::istringstream words(line);
    std::string word;
    while (words >> word)
      if (!word.empty() && std::isdigit(static_cast<unsigned char>(word[0])) &&
          word.find('.') != std::string::npos) {
        version = word;
        break;
      }
  }
  std::fclose(file);
  return version;
}

class Checker final : public DynamicChecker {
public:
  Checker(CheckDevice device, std::unique_ptr<KernelTracer> tracer,
          CheckerInfo info, DeviceSpeed speed)
      : device(device), tracer(std::move(tracer)), checkerInfo(std::move(info)),
        speed(speed) {}

  DynamicCheckOutcome check(const DynamicCheckRequest &request) override {
    DynamicCheckOutcome outcome;
    Verdict &verdict = outcome.verdict;
    verdict.fingerprint = request.fingerprint;
    verdict.candidateHash = request.candidateHash;
    verdict.gpu = checkerInfo.gpu;
    verdict.driver = checkerInfo.driver;
    outcome.details["device"] = device == CheckDevice::Cuda ? "cuda" : "cpu";
    outcome.details["tracing"] = checkerInfo.tracing;
    try {
      std::optional<c10::OperatorHandle> op = load(request, outcome);
      if (op) {
        if (device == CheckDevice::Cuda)
          checkOnCuda(*op, request, outcome);
        else
          smokeRunOnCpu(*op, request, outcome);
      }
    } catch (const CudaFault &fault) {
      // The worker's own CUDA work failed after a candidate ran: the
      // context is not to be trusted.
      setVerdict(verdict, VerdictStatus::Crashed,
                 "the CUDA context failed after the candidate ran (" +
                     fault.name + ": " + fault.message + ")");
      outcome.contextPoisoned = true;
    } catch (const std::exception &e) {
      setVerdict(verdict, VerdictStatus::Unverified,
                 "the verifier failed while checking the candidate: " +
                     exceptionMessage(e));
      clearMeasurements(verdict);
    }
    if (std::string problem = verdict.validate(); !problem.empty()) {
      outcome.details["verdict_problem"] = problem;
      setVerdict(verdict, VerdictStatus::Unverified,
                 "the verifier produced an inconsistent verdict: " + problem);
      clearMeasurements(verdict);
    }
    return outcome;
  }

  const CheckerInfo &info() const override { return checkerInfo; }

private:
  static void setVerdict(Verdict &verdict, VerdictStatus status,
                         std::string reason) {
    verdict.status = status;
    verdict.reason = std::move(reason);
  }

  static void clearMeasurements(Verdict &verdict) {
    verdict.kernelMs.reset();
    verdict.baselineMs.reset();
    verdict.speedup.reset();
  }

  /// Loads the library and finds its operator, or sets the verdict.
  std::optional<c10::OperatorHandle> load(const DynamicCheckRequest &request,
                                          DynamicCheckOutcome &outcome) {
    Verdict &verdict = outcome.verdict;
    std::string qualified = "dice::" + request.operatorName;
    char real[PATH_MAX];
    if (!realpath(request.library.c_str(), real)) {
      setVerdict(verdict, VerdictStatus::CompileError,
                 "the kernel library " + request.library +
                     " cannot be loaded: " + std::strerror(errno) +
                     "; rebuild the candidate");
      return std::nullopt;
    }
    auto &dispatcher = c10::Dispatcher::singleton();
    auto previous = loadedFrom.find(qualified);
    if (dispatcher.findSchema({qualified, ""}) &&
        (previous == loadedFrom.end() || previous->second != real)) {
      // Registering the name twice throws inside the library's static
      // initialisers, which kills the process; kernel libraries cannot be
      // unloaded (they hold unique symbols), so only a fresh worker can.
      outcome.retryError =
          "operator " + qualified + " is already registered in this worker " +
          (previous == loadedFrom.end() ? std::string("by another library")
                                        : "by " + previous->second) +
          "; retry in a fresh worker";
      return std::nullopt;
    }
    void *handle = dlopen(real, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = dlerror();
      setVerdict(verdict, VerdictStatus::CompileError,
                 "the kernel library does not load: " +
                     std::string(why ? why : "unknown dlopen error") +
                     "; rebuild the candidate");
      return std::nullopt;
    }
    loadedFrom[qualified] = real;
    struct link_map *map = nullptr;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name)
      ownLibrary = map->l_name;
    else
      ownLibrary = real;
    outcome.details["library"] = ownLibrary;

    std::optional<c10::OperatorHandle> op =
        dispatcher.findSchema({qualified, ""});
    if (!op) {
      setVerdict(verdict, VerdictStatus::CompileError,
                 "the kernel library loaded but registers no operator " +
                     qualified + "; it was built for another fingerprint");
      return std::nullopt;
    }
    const c10::FunctionSchema &schema = op->schema();
    bool argumentsMatch =
        schema.arguments().size() == request.program.inputs.size();
    for (const c10::Argument &argument : schema.arguments())
      argumentsMatch &= argument.type()->kind() == c10::TypeKind::TensorType;
    bool severalResults = request.program.outputs.size() != 1;
    bool returnsMatch =
        schema.returns().size() == 1 &&
        (severalResults
             ? schema.returns()[0].type()->isSubtypeOf(
                   *c10::ListType::ofTensors())
             : schema.returns()[0].type()->kind() == c10::TypeKind::TensorType);
    if (!argumentsMatch || !returnsMatch) {
      std::ostringstream text;
      text << schema;
      setVerdict(verdict, VerdictStatus::CompileError,
                 "the operator's schema `" + text.str() +
                     "` does not match the reference program (" +
                     std::to_string(request.program.inputs.size()) +
                     " tensor inputs, " +
                     std::to_string(request.program.outputs.size()) +
                     " results); rebuild with the request's signature");
      return std::nullopt;
    }
    return op;
  }

  /// CPU-only machines: shows that the call is contained, checks nothing.
  void smokeRunOnCpu(const c10::OperatorHandle &op,
                     const DynamicCheckRequest &request,
                     DynamicCheckOutcome &outcome) {
    c10::Device cpu(c10::kCPU);
    std::vector<at::Tensor> inputs = makeInputs(
        request.program, Distribution::Normal, seedOfTrial(request.seed, 0), cpu);
    ReferenceRun reference = runReferenceProgram(request.program, inputs, cpu);
    outcome.details["reference"] =
        reference.ok() ? Json("ran") : Json(reference.error);
    std::vector<at::Tensor> unreadable;
    for (const at::Tensor &input : inputs)
      unreadable.push_back(unreadableCopy(input));
    CallResult call = callOperator(op, unreadable, /*onCuda=*/false);
    std::string what;
    if (!call.thrown.empty()) {
      what = "the call threw (" + call.thrown + ")";
    } else if (!call.badReturn.empty()) {
      what = "the call " + call.badReturn;
    } else {
      // Only metadata: a result may share the unreadable inputs' memory.
      Json results = Json::array();
      for (const at::Tensor &result : call.results)
        results.push_back(
            result.defined()
                ? Json{{"shape", result.sizes().vec()},
                       {"dtype", dtypeString(result.scalar_type())}}
                : Json(nullptr));
      outcome.details["results"] = results;
      what = "the call returned " + std::to_string(call.results.size()) +
             (call.results.size() == 1 ? " tensor" : " tensors");
    }
    outcome.details["smoke"] = what;
    setVerdict(outcome.verdict, VerdictStatus::Unverified,
               "CPU smoke run: " + what +
                   "; nothing was checked (no CUDA device)");
  }

  /// One traced, poisoned call of the candidate. Returns false when it
  /// decided the verdict.
  bool tracedCall(const c10::OperatorHandle &op,
                  const DynamicCheckRequest &request,
                  const std::vector<at::Tensor> &inputs, int poison,
                  const std::string &when, CallResult &call,
                  DynamicCheckOutcome &outcome, int64_t &ownKernels,
                  Json &kernels) {
    Verdict &verdict = outcome.verdict;
    c10::Device cuda(c10::kCUDA, c10::cuda::current_device());
    poisonAllocator(request.program, poison, cuda);
    if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess)
      throw CudaFault{cudaGetErrorName(e), cudaGetErrorString(e),
                      static_cast<int>(e)};
    bool tracing = false;
    std::string traceError;
    if (tracer) {
      tracer->setOwnLibrary(ownLibrary);
      tracing = tracer->begin(c10::cuda::getCurrentCUDAStream().stream(),
                              traceError);
      if (!tracing)
        traceIssue = traceError;
    }
    call = callOperator(op, inputs, /*onCuda=*/true);
    if (call.fault) {
      // No trace after a sticky fault: flushing CUPTI on a broken context
      // can hang.
      if (tracing && !call.sticky)
        tracer->end();
      setVerdict(verdict, VerdictStatus::Crashed,
                 "the candidate left CUDA error " + call.fault->name + " (" +
                     call.fault->message + ") " + when +
                     "; check indexing and bounds in its kernels");
      outcome.contextPoisoned = call.sticky;
      return false;
    }
    if (tracing) {
      KernelTraceResult trace = tracer->end();
      kernels = kernelsJson(trace);
      if (!trace.problem.empty()) {
        traceIssue = trace.problem;
      } else if (std::string why = judgeTrace(trace, ownKernels);
                 !why.empty()) {
        setVerdict(verdict, VerdictStatus::Deceptive, why + " (" + when + ")");
        return false;
      }
    }
    if (!call.thrown.empty()) {
      setVerdict(verdict, VerdictStatus::Incorrect,
                 "the candidate threw " + when + ": " + call.thrown);
      return false;
    }
    if (!call.badReturn.empty()) {
      setVerdict(verdict, VerdictStatus::Incorrect,
                 "the candidate " + call.badReturn + " " + when);
      return false;
    }
    return true;
  }

  void checkOnCuda(const c10::OperatorHandle &op,
                   const DynamicCheckRequest &request,
                   DynamicCheckOutcome &outcome) {
    Verdict &verdict = outcome.verdict;
    Json &details = outcome.details;
    const ReferenceProgram &program = request.program;
    c10::Device cuda(c10::kCUDA, c10::cuda::current_device());
    traceIssue = tracer ? "" : checkerInfo.tracing;
    int64_t trials = std::max<int64_t>(request.trials, 1);
    Json trialLog = Json::array();
    int64_t ownPerCall = -1;
    double maxAbs = 0, maxRel = 0;
    auto finish = [&] {
      details["trials"] = trialLog;
      verdict.maxAbsErr = maxAbs;
      verdict.maxRelErr = maxRel;
      if (ownPerCall >= 0)
        verdict.launchedKernels = ownPerCall;
    };

    for (int64_t t = 0; t < trials; ++t) {
      Distribution distribution = distributionOfTrial(t);
      std::string when = "in trial " + std::to_string(t) + " (" +
                         distributionName(distribution) + " inputs)";
      std::vector<at::Tensor> inputs = makeInputs(
          program, distribution, seedOfTrial(request.seed, t), cuda);
      std::vector<at::Tensor> pristine;
      for (const at::Tensor &input : inputs)
        pristine.push_back(input.clone());
      Json entry = {{"trial", t},
                    {"distribution", distributionName(distribution)},
                    {"order", t % 2 == 0 ? "candidate first" : "reference first"}};
      verdict.trials = t + 1;

      ReferenceRun reference;
      // Alternating the order keeps the candidate from finding the
      // reference's results in memory the allocator hands it.
      if (t % 2 == 1)
        reference = runReferenceProgram(program, pristine, cuda);

      // The first trial calls the candidate twice, on different poisons.
      int calls = t == 0 ? 2 : 1;
      std::vector<at::Tensor> results;
      for (int c = 0; c < calls; ++c) {
        CallResult call;
        int64_t own = 0;
        Json kernels;
        std::string callWhen =
            c == 0 ? when : "in the repeated call of trial 0";
        bool passed = tracedCall(op, request, inputs, int((t + c) % 2),
                                 callWhen, call, outcome, own, kernels);
        if (!kernels.is_null() && t == 0 && c == 0)
          details["kernels"] = kernels;
        if (!kernels.is_null() && !passed && !details.contains("kernels"))
          details["kernels"] = kernels;
        if (!passed) {
          trialLog.push_back(entry);
          return finish();
        }
        if (ownPerCall < 0)
          ownPerCall = own;
        else if (own != ownPerCall)
          entry["launched_kernels"] = own;
        for (size_t i = 0; i < inputs.size(); ++i)
          if (!bitIdentical(inputs[i], pristine[i])) {
            setVerdict(verdict, VerdictStatus::Incorrect,
                       "inputs were modified: input " + std::to_string(i) +
                           " changed during the call " + callWhen +
                           "; write results to new tensors");
            trialLog.push_back(entry);
            return finish();
          }
        if (std::string wrong = checkResults(program, call.results, cuda);
            !wrong.empty()) {
          setVerdict(verdict, VerdictStatus::Incorrect,
                     "the candidate " + wrong + " (" + callWhen + ")");
          trialLog.push_back(entry);
          return finish();
        }
        if (c == 0) {
          results = call.results;
          continue;
        }
        for (size_t i = 0; i < results.size(); ++i) {
          Difference d = compareTensors(
              call.results[i], results[i],
              toleranceOf(results[i].scalar_type(), request),
              "result " + std::to_string(i));
          if (!d.problem.empty()) {
            setVerdict(verdict, VerdictStatus::Incorrect,
                       "two calls on the same inputs disagree (trial 0, "
                       "memory poisoned differently): " +
                           d.problem +
                           "; the kernel reads memory it never wrote or is "
                           "not deterministic");
            trialLog.push_back(entry);
            return finish();
          }
        }
      }

      if (t % 2 == 0)
        reference = runReferenceProgram(program, pristine, cuda);
      if (!reference.ok()) {
        setVerdict(verdict, VerdictStatus::Unverified,
                   "the reference program fails " + when + ": " +
                       reference.error);
        trialLog.push_back(entry);
        finish();
        verdict.maxAbsErr.reset();
        verdict.maxRelErr.reset();
        return;
      }
      double trialAbs = 0, trialRel = 0;
      for (size_t i = 0; i < results.size(); ++i) {
        Difference d = compareTensors(
            results[i], reference.outputs[i],
            trialTolerance(reference.outputs[i], distributionOfTrial(t),
                           request),
            "result " + std::to_string(i));
        trialAbs = std::max(trialAbs, d.maxAbs);
        trialRel = std::max(trialRel, d.maxRel);
        if (!d.problem.empty()) {
          maxAbs = std::max(maxAbs, trialAbs);
          maxRel = std::max(maxRel, trialRel);
          entry["max_abs_err"] = trialAbs;
          entry["max_rel_err"] = trialRel;
          entry["problem"] = d.problem;
          trialLog.push_back(entry);
          setVerdict(verdict, VerdictStatus::Incorrect, d.problem + " " + when);
          return finish();
        }
      }
      maxAbs = std::max(maxAbs, trialAbs);
      maxRel = std::max(maxRel, trialRel);
      entry["max_abs_err"] = trialAbs;
      entry["max_rel_err"] = trialRel;
      trialLog.push_back(entry);
    }
    finish();

    if (!traceIssue.empty()) {
      // Without a trace a library call could have computed the result:
      // never a pass.
      setVerdict(verdict, VerdictStatus::Unverified,
                 "correct in " + std::to_string(trials) +
                     " trials, but the kernels it ran could not be traced (" +
                     traceIssue + "), so it cannot be accepted");
      return;
    }
    timeAndJudge(op, request, outcome);
  }

  void timeAndJudge(const c10::OperatorHandle &op,
                    const DynamicCheckRequest &request,
                    DynamicCheckOutcome &outcome) {
    Verdict &verdict = outcome.verdict;
    const ReferenceProgram &program = request.program;
    c10::Device cuda(c10::kCUDA, c10::cuda::current_device());
    std::vector<at::Tensor> inputs = makeInputs(
        program, Distribution::Normal, seedOfTrial(request.seed, 0), cuda);

    TimingStats kernel;
    try {
      kernel = timeOnCurrentStream(
          [&] {
            std::vector<c10::IValue> stack(inputs.begin(), inputs.end());
            op.callBoxed(&stack);
          },
          request.timingRuns);
    } catch (const CudaFault &fault) {
      setVerdict(verdict, VerdictStatus::Crashed,
                 "the candidate left CUDA error " + fault.name + " (" +
                     fault.message +
                     ") during the timing runs; check indexing and bounds in "
                     "its kernels");
      outcome.contextPoisoned =
          isStickyError(static_cast<cudaError_t>(fault.code)) ||
          contextIsBroken();
      return;
    } catch (const std::exception &e) {
      setVerdict(verdict, VerdictStatus::Incorrect,
                 "the candidate threw during the timing runs: " +
                     exceptionMessage(e));
      return;
    }
    Json timing = {{"runs", kernel.runs},
                   {"warmup_runs", kernel.warmupRuns},
                   {"l2_flush_bytes", kernel.flushBytes},
                   {"kernel", {{"median_ms", kernel.medianMs},
                               {"min_ms", kernel.minMs},
                               {"p10_ms", kernel.p10Ms},
                               {"p90_ms", kernel.p90Ms},
                               {"max_ms", kernel.maxMs}}}};

    double baselineMs = 0;
    if (request.baselineMs) {
      baselineMs = *request.baselineMs;
      timing["baseline"] = {{"given_ms", baselineMs}};
    } else {
      TimingStats baseline = timeOnCurrentStream(
          [&] {
            ReferenceRun run = runReferenceProgram(program, inputs, cuda);
            if (!run.ok())
              throw std::runtime_error("the baseline failed: " + run.error);
          },
          request.timingRuns);
      baselineMs = baseline.medianMs;
      timing["baseline"] = {{"median_ms", baseline.medianMs},
                            {"min_ms", baseline.minMs},
                            {"p10_ms", baseline.p10Ms},
                            {"p90_ms", baseline.p90Ms},
                            {"max_ms", baseline.maxMs}};
    }
    outcome.details["timing"] = timing;

    double kernelMs = std::max(kernel.medianMs, 1e-6);
    double bytes = minimumBytes(program);
    double flops = minimumFlops(program);
    double boundMs = speedOfLightMs(bytes, flops, speed);
    outcome.details["speed_of_light"] = {
        {"bytes", bytes},
        {"flops", flops},
        {"bandwidth_gbs", speed.bandwidthGBs},
        {"peak_tflops", speed.peakTflops},
        {"bound_ms", boundMs},
        {"margin", kSpeedOfLightMargin}};
    verdict.setTimings(kernelMs, std::max(baselineMs, 0.0));
    if (kernelMs < kSpeedOfLightMargin * boundMs) {
      setVerdict(verdict, VerdictStatus::Deceptive,
                 "faster than the hardware allows: " + number(kernelMs) +
                     " ms, but moving " + number(bytes / 1e6) + " MB at " +
                     number(speed.bandwidthGBs) + " GB/s and computing " +
                     number(flops / 1e9) + " GFLOP at " +
                     number(speed.peakTflops) + " TFLOP/s takes at least " +
                     number(boundMs) +
                     " ms; the timed calls cannot be doing the work");
      return;
    }
    if (*verdict.speedup >= request.minSpeedup) {
      setVerdict(verdict, VerdictStatus::Accepted, "");
      return;
    }
    setVerdict(verdict, VerdictStatus::Slow,
               "correct, but " + number(*verdict.speedup) +
                   "x the baseline's speed (" + number(kernelMs) + " ms vs " +
                   number(baselineMs) + " ms); at least " +
                   number(request.minSpeedup) + "x is required");
  }

  CheckDevice device;
  std::unique_ptr<KernelTracer> tracer;
  CheckerInfo checkerInfo;
  DeviceSpeed speed;
  /// Qualified operator name -> the library that registered it.
  std::map<std::string, std::string> loadedFrom;
  std::string ownLibrary;
  /// Why this request's kernels are not traced; empty when they are.
  std::string traceIssue;
};

} // namespace

std::unique_ptr<DynamicChecker> createDynamicChecker(CheckDevice device,
                                                     std::string &error) {
  CheckerInfo info;
  if (device == CheckDevice::Cpu) {
    info.tracing = "not used in a CPU smoke run";
    return std::make_unique<Checker>(device, nullptr, info, DeviceSpeed{});
  }
  // CUPTI first: its kernel-handle map must see every library's first
  // launch, including the ones CUDA's initialisation makes.
  std::string traceError;
  std::unique_ptr<KernelTracer> tracer = KernelTracer::create(traceError);
  info.tracing = tracer ? "cupti" : "unavailable: " + traceError;
  DeviceSpeed speed;
  try {
    if (c10::cuda::device_count() == 0) {
      error = "no CUDA device is visible to this process";
      return nullptr;
    }
    const cudaDeviceProp *props = at::cuda::getCurrentDeviceProperties();
    info.gpu = props->name;
    int cudaDriver = 0;
    cudaDriverGetVersion(&cudaDriver);
    std::string api = "CUDA " + std::to_string(cudaDriver / 1000) + "." +
                      std::to_string(cudaDriver % 1000 / 10);
    std::string nvidia = nvidiaDriverVersion();
    info.driver = nvidia.empty() ? api : nvidia + " (" + api + ")";
    // Warm the context, the allocator and cuBLAS before anything is timed.
    at::Tensor warm = at::ones({256, 256}, at::TensorOptions().device(at::kCUDA));
    at::mm(warm, warm).sum().item<float>();
    speed = measureDeviceSpeed();
  } catch (const CudaFault &fault) {
    error = "CUDA initialisation failed: " + fault.name + " (" + fault.message +
            ")";
    return nullptr;
  } catch (const std::exception &e) {
    error = "CUDA initialisation failed: " + exceptionMessage(e);
    return nullptr;
  }
  info.bandwidthGBs = speed.bandwidthGBs;
  info.peakTflops = speed.peakTflops;
  return std::make_unique<Checker>(device, std::move(tracer), info, speed);
}

} // namespace dice
