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
#include "Checker.h"
#include "DeviceLock.h"
#include "KernelTrace.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <sstream>

namespace dice {
namespace {

/// The threads of this process (/proc/self/task).
size_t threadCount() {
  size_t count = 0;
  if (DIR *tasks = opendir("/proc/self/task")) {
    while (struct dirent *entry = readdir(tasks))
      count += entry->d_name[0] != '.';
    closedir(tasks);
  }
  return count;
}

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

} // namespace

namespace dynamic_check {

DynamicCheckOutcome Checker::check(const DynamicCheckRequest &request) {
  DynamicCheckOutcome outcome;
  lastLap = std::chrono::steady_clock::now();
  DeviceLock::process().takeWaitedMs(); // waits before this check are not its
  // Wall-clock start, so that a batch's checks can be laid out in time.
  outcome.details["started_unix_s"] =
      std::chrono::duration<double>(
          std::chrono::system_clock::now().time_since_epoch())
          .count();
  Verdict &verdict = outcome.verdict;
  verdict.fingerprint = request.fingerprint;
  verdict.candidateHash = request.candidateHash;
  verdict.gpu = checkerInfo.gpu;
  verdict.driver = checkerInfo.driver;
  outcome.details["device"] = device == CheckDevice::Cuda ? "cuda" : "cpu";
  outcome.details["tracing"] = checkerInfo.tracing;
  // A program with size symbols is checked at its example sizes (and timed
  // there) and, every other trial, at other sizes.
  DynamicCheckRequest atExample = request;
  otherShape.reset();
  if (!request.program.isStatic()) {
    std::vector<int64_t> examples = request.program.exampleSizes();
    std::vector<int64_t> others = request.program.otherSizes(2, 1);
    atExample.program = request.program.specialize(examples);
    otherShape = request.program.specialize(others);
    outcome.details["sizes"] = {{"example", examples}, {"other", others}};
  }
  DeviceLock::process().setWaitBudget(request.lockWaitSeconds);
  try {
    std::optional<c10::OperatorHandle> op;
    bool timeIt = false;
    {
      // Other workers may use the GPU too, but none times while we check
      // (a no-op without other workers, as for CPU-mode ones).
      DeviceLock::Guard inUse = DeviceLock::process().shared();
      op = load(atExample, outcome);
      lap(outcome, "load");
      if (op) {
        if (device == CheckDevice::Cuda)
          timeIt = checkOnCuda(*op, atExample, outcome);
        else
          smokeRunOnCpu(*op, atExample, outcome);
      }
    }
    if (timeIt) {
      timeAndJudge(*op, atExample, outcome);
      lap(outcome, "judgement");
    }
    firstResults.clear();
    firstSnapshot.clear();
    firstReference.clear();
    firstPrecise.clear();
  } catch (const DeviceLockTimeout &timeout) {
    outcome.retryError =
        "waited " + std::to_string(int(timeout.waitedSeconds)) +
        " s for the device lock, which another worker's candidate held; "
        "retry when it is done";
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

void Checker::warmUp() {
  // CPU-mode workers run it too: the steps are the same code, and the
  // program below is checked wherever workers start.
  c10::Device where = device == CheckDevice::Cuda
                          ? c10::Device(c10::kCUDA, c10::cuda::current_device())
                          : c10::Device(c10::kCPU);
  DynamicCheckRequest request;
  Json details;
  for (const char *dtype : {"float32", "float16", "bfloat16"}) {
    // y = sum(exp(x) * x, dim 1): elementwise work, a reduction and a
    // constant-free program every backend step can run.
    std::string type = std::string(R"({"shape": [64, 256], "dtype": ")") + dtype + "\"}";
    std::string reduced = std::string(R"({"shape": [64], "dtype": ")") + dtype + "\"}";
    Result<ReferenceProgram> program = ReferenceProgram::fromJson(
        R"({"inputs": [)" + type + R"(], "ops": [)"
        R"({"fn": "exp", "args": [0], "type": )" + type + "}, " +
        R"({"fn": "mul", "args": [1, 0], "type": )" + type + "}, " +
        R"({"fn": "sum", "args": [2], "ints": {"dims": [1]}, "type": )" + reduced + "}" +
        R"(], "outputs": [3]})");
    if (!program)
      throw std::runtime_error("the warm-up program is malformed: " +
                               program.error().message);
    for (int64_t t = 0; t < 4; ++t) {
      Distribution distribution = distributionOfTrial(t);
      std::vector<at::Tensor> inputs =
          makeInputs(*program, distribution, seedOfTrial(0, t), where);
      poisonAllocator(*program, int(t % 2), where);
      ReferenceRun reference = runReferenceProgram(*program, inputs, where);
      if (!reference.ok())
        throw std::runtime_error("the warm-up program fails: " + reference.error);
      std::vector<at::Tensor> precise =
          preciseOutputs(*program, inputs, request, details);
      compareWithReference(reference.outputs, reference.outputs, precise,
                           distribution, request);
    }
  }
  if (device != CheckDevice::Cuda)
    return;
  at::Tensor x = at::ones({1024}, at::TensorOptions().device(where));
  auto run = [&] { x.exp(); };
  if (tracer) {
    // A trace that cannot be taken is each verdict's to report, not the
    // warm-up's.
    try {
      deviceTimeOnCurrentStream(run, TimingPlan{3, 0}, *tracer);
    } catch (const TraceFailure &) {
    }
  }
  timeOnCurrentStream(run, TimingPlan{3, 0});
}

void Checker::lap(DynamicCheckOutcome &outcome, const char *phase) {
  auto now = std::chrono::steady_clock::now();
  double ms = std::chrono::duration<double, std::milli>(now - lastLap).count();
  lastLap = now;
  auto add = [&](Json &phases, double value) {
    phases[phase] = (phases.contains(phase) ? phases[phase].get<double>() : 0.0) + value;
  };
  add(outcome.details["phase_ms"], ms);
  // The part of the phase spent waiting for other workers' hold on the GPU.
  add(outcome.details["lock_wait_ms"], DeviceLock::process().takeWaitedMs());
}

void Checker::setVerdict(Verdict &verdict, VerdictStatus status,
                              std::string reason) {
  verdict.status = status;
  verdict.reason = std::move(reason);
}

void Checker::clearMeasurements(Verdict &verdict) {
  verdict.kernelMs.reset();
  verdict.baselineMs.reset();
  verdict.speedup.reset();
}

/// Loads the library and finds its operator, or sets the verdict.
std::optional<c10::OperatorHandle>
Checker::load(const DynamicCheckRequest &request,
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
  auto here = loaded.find(real);
  if (here == loaded.end()) {
    // Another library's operators may bear the names this one registers
    // (the next candidate of a request, or a shared build holding one):
    // light libraries go, and their registrations with them, rather than
    // costing a fresh worker (a LibTorch and CUDA start).
    for (auto it = loaded.begin(); it != loaded.end();)
      it = unloadLight(it->second) ? loaded.erase(it) : std::next(it);
    std::vector<std::string> names = request.libraryOperators;
    names.push_back(request.operatorName);
    for (const std::string &name : names)
      if (dispatcher.findSchema({"dice::" + name, ""})) {
        // Registering a name twice throws inside a full build's static
        // initialisers, which kills the process, fails a light one's
        // silently, and such libraries cannot be unloaded (they hold
        // unique symbols): only a fresh worker can load this one.
        outcome.retryError = "operator dice::" + name +
                             " is already registered in this worker by "
                             "another library; retry in a fresh worker";
        return std::nullopt;
      }
    size_t threadsBefore = threadCount();
    void *handle = dlopen(real, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = dlerror();
      setVerdict(verdict, VerdictStatus::CompileError,
                 "the kernel library does not load: " +
                     std::string(why ? why : "unknown dlopen error") +
                     "; rebuild the candidate");
      return std::nullopt;
    }
    std::string entry = "dice_light_entry_" + request.operatorName;
    here = loaded
               .emplace(real, LoadedLibrary{real, handle,
                                            dlsym(handle, entry.c_str()) != nullptr,
                                            threadsBefore})
               .first;
  }
  void *handle = here->second.handle;
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

bool Checker::unloadLight(const LoadedLibrary &library) {
  if (!library.light || threadCount() > library.threadsBefore)
    return false;
  // Nothing of the candidate may still run on the device when its code
  // goes.
  if (device == CheckDevice::Cuda && cudaDeviceSynchronize() != cudaSuccess)
    return false;
  dlclose(library.handle);
  return true;
}

} // namespace dynamic_check

Result<std::unique_ptr<DynamicChecker>>
createDynamicChecker(CheckDevice device) {
  using dynamic_check::Checker;
  using dynamic_check::exceptionMessage;
  CheckerInfo info;
  if (device == CheckDevice::Cpu) {
    info.tracing = "not used in a CPU smoke run";
    auto checker = std::make_unique<Checker>(device, nullptr, info, DeviceSpeed{});
    // Fatal here: CPU workers run in CI, where the warm-up program itself
    // is checked.
    try {
      checker->warmUp();
    } catch (const std::exception &e) {
      return Error("the worker's warm-up failed: " + exceptionMessage(e));
    }
    checker->noteWarmUp("done");
    return std::unique_ptr<DynamicChecker>(std::move(checker));
  }
  // CUPTI first: its kernel-handle map must see every library's first
  // launch, including the ones CUDA's initialisation makes.
  std::string traceError;
  std::unique_ptr<KernelTracer> tracer = KernelTracer::create(traceError);
  if (const std::string &lockError = DeviceLock::process().error();
      !lockError.empty())
    return Error(lockError + "; without it, timed runs would share the GPU");
  info.tracing = tracer ? "cupti" : "unavailable: " + traceError;
  DeviceSpeed speed;
  try {
    if (c10::cuda::device_count() == 0)
      return Error("no CUDA device is visible to this process");
    const cudaDeviceProp *props = at::cuda::getCurrentDeviceProperties();
    info.gpu = props->name;
    int cudaDriver = 0;
    cudaDriverGetVersion(&cudaDriver);
    std::string api = "CUDA " + std::to_string(cudaDriver / 1000) + "." +
                      std::to_string(cudaDriver % 1000 / 10);
    std::string nvidia = nvidiaDriverVersion();
    info.driver = nvidia.empty() ? api : nvidia + " (" + api + ")";
    // Warm the context, the allocator and cuBLAS before anything is timed.
    {
      DeviceLock::Guard inUse = DeviceLock::process().shared();
      at::Tensor warm = at::ones({256, 256}, at::TensorOptions().device(at::kCUDA));
      at::mm(warm, warm).sum().item<float>();
    }
    // The device's speed is a timing: the GPU to ourselves.
    {
      DeviceLock::Guard alone = DeviceLock::process().exclusive();
      speed = measureDeviceSpeed();
    }
  } catch (const CudaFault &fault) {
    return Error("CUDA initialisation failed: " + fault.name + " (" +
                 fault.message + ")");
  } catch (const std::exception &e) {
    return Error("CUDA initialisation failed: " + exceptionMessage(e));
  }
  info.bandwidthGBs = speed.bandwidthGBs;
  info.peakTflops = speed.peakTflops;
  auto checker = std::make_unique<Checker>(device, std::move(tracer), info, speed);
  // A CUDA error is sticky and ends the worker; anything else (a dtype the
  // GPU lacks, say) only costs the first check its first-call time.
  try {
    DeviceLock::Guard inUse = DeviceLock::process().shared();
    checker->warmUp();
    checker->noteWarmUp("done");
  } catch (const CudaFault &fault) {
    return Error("CUDA initialisation failed while warming up: " + fault.name +
                 " (" + fault.message + ")");
  } catch (const std::exception &e) {
    checker->noteWarmUp("failed: " + exceptionMessage(e));
  }
  return std::unique_ptr<DynamicChecker>(std::move(checker));
}

} // namespace dice
