//===- KernelTrace.cpp - CUPTI tracing of candidate launches --------------===//
//
// Two CUPTI mechanisms, joined by correlation id:
//  - API callbacks on the launch entry points. They run on the launching
//    thread with the call's parameters: the host stub (or, on CUDA 13's
//    `<<<>>>` path, a kernel handle mapped back to its stub) says which shared
//    object launched the kernel, the stream parameter where it went.
//  - Kernel activity records: what really ran, with its name and stream.
// A kernel that ran without a launch callback came from a path the
// callbacks do not cover (a graph replay, device-side launches).
//
// No LibTorch here: only CUPTI and the CUDA runtime's types.
//
//===----------------------------------------------------------------------===//

#include "KernelTrace.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <execinfo.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_set>
#include <mutex>
#include <unordered_map>

namespace dice {
namespace {

// The parameters of `__cudaLaunchKernel` and `__cudaGetKernel`, the entry
// points nvcc 13 emits for `<<<>>>`. CUPTI reports them, but the toolkit
// ships no params struct for them; the layout is the declaration's
// (crt/device_functions.h), as for every generated params struct.
struct StubLaunchParams {
  cudaKernel_t kernel;
  dim3 gridDim;
  dim3 blockDim;
  void **args;
  size_t sharedMem;
  cudaStream_t stream;
};
struct StubGetKernelParams {
  cudaKernel_t *kernelPtr;
  const void *entryFuncAddr;
};

constexpr CUpti_CallbackId kRuntimeLaunches[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
};
constexpr CUpti_CallbackId kDriverLaunches[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
};
constexpr CUpti_CallbackId kGetKernel[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaGetKernel_v12000,
    CUPTI_RUNTIME_TRACE_CBID___cudaGetKernel_v13000,
};

struct RanKernel {
  uint32_t correlationId;
  std::string name;
  uint32_t streamId;
  uint64_t start, end;
};

struct TraceState {
  std::mutex mutex;
  CUpti_SubscriberHandle subscriber = nullptr;
  std::atomic<bool> recording{false};
  const void *currentStream = nullptr;
  std::string ownLibrary;
  /// The functions the candidate's library defines (mangled), among them
  /// the host stub of each of its kernels, which has the kernel's name.
  std::unordered_set<std::string> ownSymbols;
  /// cudaKernel_t -> host stub, filled whenever a library resolves a kernel.
  std::unordered_map<const void *, const void *> stubOfKernel;
  std::vector<TracedKernel> launches;
  std::unordered_map<uint32_t, size_t> launchOfCorrelation;
  std::vector<RanKernel> ran;
  size_t droppedRecords = 0;
};

TraceState *state = nullptr;

// The runtime launch in progress on this thread: the driver launch it makes
// internally belongs to it and is not a second (foreign) launch.
thread_local int runtimeLaunchDepth = 0;
thread_local long runtimeLaunchIndex = -1;

std::string demangle(const char *name) {
  if (!name)
    return "";
  int status = 0;
  char *out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || !out)
    return name;
  std::string result(out);
  std::free(out);
  return result;
}

/// The names of the functions `path` (an ELF shared object) defines, from
/// its static and dynamic symbol tables. Empty when it cannot be read.
std::unordered_set<std::string> definedFunctions(const std::string &path) {
  std::unordered_set<std::string> names;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return names;
  struct stat st;
  void *map = MAP_FAILED;
  if (fstat(fd, &st) == 0 && size_t(st.st_size) >= sizeof(Elf64_Ehdr))
    map = mmap(nullptr, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED)
    return names;
  const auto *bytes = static_cast<const uint8_t *>(map);
  size_t size = st.st_size;
  const auto *header = reinterpret_cast<const Elf64_Ehdr *>(bytes);
  bool elf64 = std::memcmp(header->e_ident, ELFMAG, SELFMAG) == 0 &&
               header->e_ident[EI_CLASS] == ELFCLASS64 &&
               header->e_shoff + header->e_shnum * sizeof(Elf64_Shdr) <= size;
  const auto *sections =
      elf64 ? reinterpret_cast<const Elf64_Shdr *>(bytes + header->e_shoff)
            : nullptr;
  for (unsigned i = 0; elf64 && i < header->e_shnum; ++i) {
    const Elf64_Shdr &table = sections[i];
    if ((table.sh_type != SHT_SYMTAB && table.sh_type != SHT_DYNSYM) ||
        table.sh_link >= header->e_shnum ||
        table.sh_offset + table.sh_size > size)
      continue;
    const Elf64_Shdr &strings = sections[table.sh_link];
    if (strings.sh_offset + strings.sh_size > size)
      continue;
    const auto *symbols =
        reinterpret_cast<const Elf64_Sym *>(bytes + table.sh_offset);
    const char *text = reinterpret_cast<const char *>(bytes + strings.sh_offset);
    for (size_t k = 0; k < table.sh_size / sizeof(Elf64_Sym); ++k) {
      const Elf64_Sym &sym = symbols[k];
      if (sym.st_shndx == SHN_UNDEF || ELF64_ST_TYPE(sym.st_info) != STT_FUNC ||
          sym.st_name >= strings.sh_size)
        continue;
      names.insert(std::string(text + sym.st_name,
                               strnlen(text + sym.st_name,
                                       strings.sh_size - sym.st_name)));
    }
  }
  munmap(map, size);
  return names;
}

/// The stubs' names as the launches name their kernels: the symbol
/// tables' names and, where they differ, without internal linkage.
std::unordered_set<std::string>
asLaunchNames(std::unordered_set<std::string> names) {
  std::vector<std::string> extra;
  for (const std::string &name : names)
    if (std::string plain = withoutInternalLinkage(name); plain != name)
      extra.push_back(std::move(plain));
  names.insert(extra.begin(), extra.end());
  return names;
}

std::string moduleOf(const void *address) {
  Dl_info info;
  if (!address || !dladdr(address, &info) || !info.dli_fname)
    return "";
  return info.dli_fname;
}

/// The module that called into the CUDA runtime, from the call stack: the
/// first frame outside CUDA's and CUPTI's libraries and outside this
/// executable (the callback's own frames). The fallback for a kernel handle
/// resolved before the trace existed.
std::string callerModule() {
  void *frames[64];
  int count = backtrace(frames, 64);
  std::string self = moduleOf(reinterpret_cast<const void *>(&callerModule));
  for (int i = 0; i < count; ++i) {
    std::string module = moduleOf(frames[i]);
    if (module.empty() || module == self)
      continue;
    std::string base = moduleBaseName(module);
    if (base.rfind("libcuda.so", 0) == 0 || base.rfind("libcudart", 0) == 0 ||
        base.rfind("libcupti", 0) == 0)
      continue;
    return module;
  }
  return "";
}

/// The stream a launch really targets: a null stream is the legacy default
/// stream, or the per-thread one for the `_ptsz` entry points.
const void *effectiveStream(const void *stream, bool perThread) {
  if (stream == nullptr)
    return perThread ? static_cast<const void *>(cudaStreamPerThread)
                     : static_cast<const void *>(cudaStreamLegacy);
  return stream;
}

bool isPerThread(CUpti_CallbackId cbid) {
  switch (cbid) {
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
  case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000:
    return true;
  default:
    return false;
  }
}

/// The host stub and stream of a runtime launch.
void runtimeLaunchTarget(CUpti_CallbackId cbid, const void *params,
                         const void *&stub, const void *&stream) {
  switch (cbid) {
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000: {
    auto *p = static_cast<const cudaLaunchKernel_v7000_params *>(params);
    stub = p->func;
    stream = p->stream;
    return;
  }
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000: {
    auto *p =
        static_cast<const cudaLaunchCooperativeKernel_v9000_params *>(params);
    stub = p->func;
    stream = p->stream;
    return;
  }
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
  case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: {
    auto *p = static_cast<const cudaLaunchKernelExC_v11060_params *>(params);
    stub = p->func;
    stream = p->config ? p->config->stream : nullptr;
    return;
  }
  default: {
    auto *p = static_cast<const StubLaunchParams *>(params);
    auto it = state->stubOfKernel.find(p->kernel);
    stub = it == state->stubOfKernel.end() ? nullptr : it->second;
    stream = p->stream;
    return;
  }
  }
}

void onRuntimeCallback(CUpti_CallbackId cbid, const CUpti_CallbackData *cb) {
  for (CUpti_CallbackId id : kGetKernel) {
    if (cbid != id)
      continue;
    if (cb->callbackSite == CUPTI_API_EXIT) {
      auto *p = static_cast<const StubGetKernelParams *>(cb->functionParams);
      std::lock_guard<std::mutex> lock(state->mutex);
      if (p->kernelPtr && *p->kernelPtr)
        state->stubOfKernel[*p->kernelPtr] = p->entryFuncAddr;
    }
    return;
  }
  if (cb->callbackSite == CUPTI_API_EXIT) {
    // Callbacks switched on mid-call see an exit without its entry.
    if (runtimeLaunchDepth > 0)
      --runtimeLaunchDepth;
    return;
  }
  ++runtimeLaunchDepth;
  runtimeLaunchIndex = -1;
  if (!state->recording.load())
    return;
  std::lock_guard<std::mutex> lock(state->mutex);
  const void *stub = nullptr, *stream = nullptr;
  runtimeLaunchTarget(cbid, cb->functionParams, stub, stream);
  TracedKernel kernel;
  kernel.api = cb->functionName ? cb->functionName : "a runtime launch";
  kernel.name = demangle(cb->symbolName);
  kernel.module = stub ? moduleOf(stub) : callerModule();
  kernel.ownLibrary =
      !kernel.module.empty() && kernel.module == state->ownLibrary;
  // Where the launch handle could not be traced to its module (nvcc's
  // kernel handles resolved before the trace began), the kernel's name
  // decides: the candidate's library defines a host stub of that name for
  // each of its kernels.
  if (kernel.module.empty() && cb->symbolName &&
      state->ownSymbols.count(cb->symbolName)) {
    kernel.module = state->ownLibrary;
    kernel.ownLibrary = true;
  }
  kernel.onCurrentStream =
      effectiveStream(stream, isPerThread(cbid)) ==
      effectiveStream(state->currentStream, false);
  runtimeLaunchIndex = static_cast<long>(state->launches.size());
  state->launchOfCorrelation[cb->correlationId] = state->launches.size();
  state->launches.push_back(std::move(kernel));
}

void onDriverCallback(CUpti_CallbackId cbid, const CUpti_CallbackData *cb) {
  if (cb->callbackSite != CUPTI_API_ENTER || !state->recording.load())
    return;
  std::lock_guard<std::mutex> lock(state->mutex);
  if (runtimeLaunchDepth > 0) {
    // The runtime's own driver call: its kernel may carry this id.
    if (runtimeLaunchIndex >= 0)
      state->launchOfCorrelation[cb->correlationId] =
          static_cast<size_t>(runtimeLaunchIndex);
    return;
  }
  const void *stream = nullptr;
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx ||
      cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz) {
    auto *p = static_cast<const cuLaunchKernelEx_params *>(cb->functionParams);
    stream = p->config ? p->config->hStream : nullptr;
  } else {
    // cuLaunchKernel and cuLaunchCooperativeKernel share the layout.
    auto *p = static_cast<const cuLaunchKernel_params *>(cb->functionParams);
    stream = p->hStream;
  }
  bool perThread = cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
                   cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz ||
                   cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz;
  TracedKernel kernel;
  kernel.api = cb->functionName ? cb->functionName : "a driver launch";
  kernel.name = demangle(cb->symbolName);
  kernel.driverApi = true;
  kernel.onCurrentStream = effectiveStream(stream, perThread) ==
                           effectiveStream(state->currentStream, false);
  state->launchOfCorrelation[cb->correlationId] = state->launches.size();
  state->launches.push_back(std::move(kernel));
}

void CUPTIAPI onCallback(void *, CUpti_CallbackDomain domain,
                         CUpti_CallbackId cbid, const void *data) {
  auto *cb = static_cast<const CUpti_CallbackData *>(data);
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
    onRuntimeCallback(cbid, cb);
  else if (domain == CUPTI_CB_DOMAIN_DRIVER_API)
    onDriverCallback(cbid, cb);
}

constexpr size_t kActivityBufferBytes = 4 << 20;

void CUPTIAPI onBufferRequested(uint8_t **buffer, size_t *size,
                                size_t *maxNumRecords) {
  *buffer = static_cast<uint8_t *>(std::aligned_alloc(8, kActivityBufferBytes));
  *size = *buffer ? kActivityBufferBytes : 0;
  *maxNumRecords = 0;
}

void CUPTIAPI onBufferCompleted(CUcontext context, uint32_t streamId,
                                uint8_t *buffer, size_t, size_t validSize) {
  std::vector<RanKernel> ran;
  CUpti_Activity *record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, validSize, &record) ==
         CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
      continue;
    auto *kernel = reinterpret_cast<const CUpti_ActivityKernel10 *>(record);
    ran.push_back({kernel->correlationId, demangle(kernel->name),
                   kernel->streamId, kernel->start, kernel->end});
  }
  size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(context, streamId, &dropped);
  std::free(buffer);
  std::lock_guard<std::mutex> lock(state->mutex);
  state->droppedRecords += dropped;
  for (RanKernel &kernel : ran)
    state->ran.push_back(std::move(kernel));
}

std::string cuptiError(const char *what, CUptiResult result) {
  const char *text = nullptr;
  cuptiGetResultString(result, &text);
  return std::string(what) + ": " + (text ? text : "unknown CUPTI error");
}

CUptiResult enableLaunchCallbacks(bool enable) {
  for (CUpti_CallbackId id : kRuntimeLaunches)
    if (CUptiResult r = cuptiEnableCallback(enable, state->subscriber,
                                            CUPTI_CB_DOMAIN_RUNTIME_API, id);
        r != CUPTI_SUCCESS)
      return r;
  for (CUpti_CallbackId id : kDriverLaunches)
    if (CUptiResult r = cuptiEnableCallback(enable, state->subscriber,
                                            CUPTI_CB_DOMAIN_DRIVER_API, id);
        r != CUPTI_SUCCESS)
      return r;
  return CUPTI_SUCCESS;
}

} // namespace

std::unique_ptr<KernelTracer> KernelTracer::create(std::string &error) {
  if (state) {
    error = "a kernel tracer already exists in this process";
    return nullptr;
  }
  auto *fresh = new TraceState;
  state = fresh;
  CUptiResult r = cuptiSubscribe(&fresh->subscriber, onCallback, nullptr);
  if (r != CUPTI_SUCCESS) {
    error = r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                ? "CUPTI is already in use by another tool (a profiler "
                  "attached?)"
                : cuptiError("cannot subscribe to CUPTI", r);
    state = nullptr;
    delete fresh;
    return nullptr;
  }
  // Kernel handles are resolved once per library and kernel, so the map is
  // kept up to date from the start, not only while recording.
  for (CUpti_CallbackId id : kGetKernel) {
    r = cuptiEnableCallback(1, fresh->subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                            id);
    if (r != CUPTI_SUCCESS)
      break;
  }
  if (r == CUPTI_SUCCESS)
    r = cuptiActivityRegisterCallbacks(onBufferRequested, onBufferCompleted);
  if (r != CUPTI_SUCCESS) {
    error = cuptiError("cannot set up CUPTI callbacks", r);
    cuptiUnsubscribe(fresh->subscriber);
    state = nullptr;
    delete fresh;
    return nullptr;
  }
  return std::unique_ptr<KernelTracer>(new KernelTracer);
}

KernelTracer::~KernelTracer() {
  if (!state)
    return;
  state->recording = false;
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiUnsubscribe(state->subscriber);
  // Callbacks may still be in flight on other threads; the state stays.
  state = nullptr;
}

void KernelTracer::setOwnLibrary(std::string path) {
  std::unordered_set<std::string> symbols = asLaunchNames(definedFunctions(path));
  std::lock_guard<std::mutex> lock(state->mutex);
  state->ownLibrary = std::move(path);
  state->ownSymbols = std::move(symbols);
}

bool KernelTracer::begin(const void *currentStream, std::string &error) {
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    state->launches.clear();
    state->launchOfCorrelation.clear();
    state->ran.clear();
    state->droppedRecords = 0;
    state->currentStream = currentStream;
  }
  CUptiResult r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r == CUPTI_SUCCESS)
    r = enableLaunchCallbacks(true);
  if (r != CUPTI_SUCCESS) {
    error = cuptiError("cannot start tracing", r);
    enableLaunchCallbacks(false);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    return false;
  }
  state->recording = true;
  return true;
}

KernelTraceResult KernelTracer::end() {
  state->recording = false;
  KernelTraceResult result;
  CUptiResult r = enableLaunchCallbacks(false);
  CUptiResult flush = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS)
    result.problem = cuptiError("cannot stop tracing", r);
  else if (flush != CUPTI_SUCCESS)
    result.problem = cuptiError("cannot collect kernel records", flush);

  std::lock_guard<std::mutex> lock(state->mutex);
  if (state->droppedRecords && result.problem.empty())
    result.problem = std::to_string(state->droppedRecords) +
                     " kernel records were dropped";
  result.launches = std::move(state->launches);
  for (RanKernel &kernel : state->ran) {
    result.spans.emplace_back(kernel.start, kernel.end);
    auto it = state->launchOfCorrelation.find(kernel.correlationId);
    if (it == state->launchOfCorrelation.end()) {
      result.untraced.push_back(std::move(kernel.name));
      continue;
    }
    TracedKernel &launch = result.launches[it->second];
    launch.ran = true;
    launch.streamId = kernel.streamId;
    if (!kernel.name.empty())
      launch.name = std::move(kernel.name);
  }
  state->launches.clear();
  state->launchOfCorrelation.clear();
  state->ran.clear();
  return result;
}

uint64_t KernelTracer::timestamp() {
  uint64_t now = 0;
  cuptiGetTimestamp(&now);
  return now;
}

std::string withoutInternalLinkage(const std::string &mangled) {
  if (mangled.rfind("_Z", 0) != 0)
    return mangled;
  std::string out = "_Z";
  size_t at = 2;
  auto digit = [&](size_t i) {
    return i < mangled.size() &&
           std::isdigit(static_cast<unsigned char>(mangled[i]));
  };
  if (mangled.compare(at, 1, "L") == 0 && digit(at + 1))
    return out + mangled.substr(at + 1);
  if (mangled.compare(at, 1, "N") != 0)
    return mangled;
  out += 'N';
  ++at;
  // The nested name's source names (<length><name>), each of which may
  // carry the marker; anything else ends the walk.
  for (;;) {
    if (mangled.compare(at, 1, "L") == 0 && digit(at + 1))
      ++at;
    if (!digit(at))
      break;
    size_t length = 0, start = at;
    while (digit(at) && length < 100000)
      length = length * 10 + (mangled[at++] - '0');
    if (at + length > mangled.size())
      return mangled;
    out += mangled.substr(start, at - start + length);
    at += length;
  }
  return out + mangled.substr(at);
}

std::string moduleBaseName(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool isAllowedPlumbingKernel(const TracedKernel &kernel) {
  std::string base = moduleBaseName(kernel.module);
  // An untraced module (empty) is judged by the name alone: the candidate's
  // own kernels are recognised before this is asked.
  bool fromTorch = base.empty() || base.rfind("libtorch", 0) == 0 ||
                   base.rfind("libc10", 0) == 0;
  if (!fromTorch || kernel.driverApi)
    return false;
  // zeros/zero_/fill_ and copy_/contiguous: the kernels behind the
  // allocation and layout calls the static allowlist admits. Casting and
  // arithmetic kernels have other names.
  for (const char *allowed : {"at::native::FillFunctor<",
                              "at::native::direct_copy_kernel_cuda("})
    if (kernel.name.find(allowed) != std::string::npos)
      return true;
  return false;
}

} // namespace dice
