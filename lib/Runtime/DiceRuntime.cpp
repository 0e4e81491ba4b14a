//===- DiceRuntime.cpp - kernel libraries behind a C ABI ------------------===//
//
// Implements include/dice/Runtime/DiceRuntime.h over LibTorch: manifests
// name kernel libraries, loading a library registers its dispatcher op, and
// calls go through the dispatcher boxed, so one runtime serves every
// signature. Every entry point catches what LibTorch throws: the callers are
// C and LLVM-built code.
//
// Paths are handled with POSIX calls: libtorch.so exports std::filesystem
// symbols of its own that crash when a library linked with it resolves to
// them.
//
//===----------------------------------------------------------------------===//

#include "dice/Runtime/DiceRuntime.h"
#include "dice/Runtime/Manifest.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

struct TensorSig {
  std::vector<int64_t> shape; ///< -1: any size
  at::ScalarType dtype;
};

struct Kernel {
  std::string fingerprint;
  std::string operatorName; ///< "dice::k_<fp>"
  std::string manifest;     ///< where it was listed, for messages
  std::vector<TensorSig> inputs, results;
};

struct Runtime {
  std::mutex mutex;
  /// An opened manifest as its reader returned it, and which file that was:
  /// dice-lower replaces the file by a rename to add kernels, so a changed
  /// inode or modification time means it must be read again.
  struct Opened {
    dice::Manifest manifest;
    ino_t inode = 0;
    struct timespec modified = {};
  };
  /// Opened manifests by real path.
  std::map<std::string, Opened> manifests;
  std::map<std::string, Kernel> kernels;
  /// Results handed out with runtime-owned memory, by their data pointer.
  std::unordered_multimap<void *, at::Tensor> live;
};

/// Never destroyed: lowered code may still call in while static
/// destructors run, and LibTorch's own globals may already be gone then.
Runtime &runtime() {
  static Runtime *instance = new Runtime;
  return *instance;
}

/// Indexed by DiceDType; the order of dice::DType.
constexpr at::ScalarType kScalarTypes[] = {
    at::kFloat, at::kHalf,  at::kBFloat16, at::kDouble, at::kLong,
    at::kInt,   at::kShort, at::kChar,     at::kByte,   at::kBool};
static_assert(std::size(kScalarTypes) == DICE_DTYPE_BOOL + 1);

std::optional<at::ScalarType> scalarTypeOfCode(int32_t code) {
  if (code < 0 || code > DICE_DTYPE_BOOL)
    return std::nullopt;
  return kScalarTypes[code];
}

const char *dtypeName(at::ScalarType type) {
  for (size_t i = 0; i < std::size(kScalarTypes); ++i)
    if (type == kScalarTypes[i])
      return dice::dtypeName(static_cast<dice::DType>(i));
  return c10::toString(type);
}

std::string shapeText(c10::IntArrayRef shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? ", " : "") << shape[i];
  return os.str() + ']';
}

int fail(char *error, size_t length, const std::string &message) {
  if (error && length) {
    size_t n = std::min(length - 1, message.size());
    std::memcpy(error, message.data(), n);
    error[n] = '\0';
  }
  return 1;
}

std::string torchMessage(const c10::Error &e) {
  return e.what_without_backtrace();
}

//===----------------------------------------------------------------------===//
// Manifests
//===----------------------------------------------------------------------===//

bool isRegularFile(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

TensorSig toSig(const dice::ManifestTensor &tensor) {
  return {tensor.shape, kScalarTypes[static_cast<int>(tensor.dtype)]};
}

/// Reads a manifest (lib/Runtime/Manifest.cpp) and loads its libraries; on
/// failure returns a message.
std::optional<std::string> openManifest(const std::string &path,
                                        std::vector<Kernel> &kernels,
                                        dice::Manifest &manifest) {
  dice::Result<dice::Manifest> read = dice::readManifest(path);
  if (!read)
    return read.error().format();
  auto &dispatcher = c10::Dispatcher::singleton();
  for (const auto &[fingerprint, entry] : read->kernels) {
    std::string where = path + ": kernel '" + fingerprint + "'";
    Kernel kernel;
    kernel.fingerprint = fingerprint;
    kernel.manifest = path;
    kernel.operatorName = entry.operatorName;
    for (const dice::ManifestTensor &t : entry.inputs)
      kernel.inputs.push_back(toSig(t));
    for (const dice::ManifestTensor &t : entry.results)
      kernel.results.push_back(toSig(t));
    // A kernel whose op is registered already (its library loaded under
    // another path, or a test's own registration) is not loaded again:
    // registering a name twice kills the process.
    if (!entry.library.empty() &&
        !dispatcher.findSchema({kernel.operatorName, ""})) {
      std::string file = dice::libraryPath(path, entry);
      if (!isRegularFile(file))
        return where + ": library '" + file + "' does not exist";
      if (!dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        const char *why = dlerror();
        return where + ": cannot load '" + file +
               "': " + (why ? why : "unknown dlopen error");
      }
      if (!dispatcher.findSchema({kernel.operatorName, ""}))
        return where + ": library '" + file + "' does not register " +
               kernel.operatorName;
    }
    kernels.push_back(std::move(kernel));
  }
  manifest = read.take();
  return std::nullopt;
}

/// One spelling per file, so that reopening is recognised.
std::string canonicalPath(const char *path) {
  std::string canonical = path;
  if (char *real = ::realpath(path, nullptr)) {
    canonical = real;
    std::free(real);
  }
  return canonical;
}

//===----------------------------------------------------------------------===//
// Calls
//===----------------------------------------------------------------------===//

c10::Device deviceOf(const DiceMemRef &ref) {
  return ref.device < 0
             ? c10::Device(c10::kCPU)
             : c10::Device(c10::kCUDA,
                           static_cast<c10::DeviceIndex>(ref.device));
}

/// Checks `ref` against `sig`; returns a message when they disagree.
std::optional<std::string> checkRef(const DiceMemRef &ref,
                                    const TensorSig &sig) {
  std::optional<at::ScalarType> type = scalarTypeOfCode(ref.dtype);
  if (!type)
    return "has dtype code " + std::to_string(ref.dtype) +
           ", which is not a DiceDType";
  if (*type != sig.dtype)
    return std::string("is ") + dtypeName(*type) + ", the kernel takes " +
           dtypeName(sig.dtype);
  if (ref.rank != static_cast<int64_t>(sig.shape.size()))
    return "has rank " + std::to_string(ref.rank) + ", the kernel takes rank " +
           std::to_string(sig.shape.size());
  if (ref.rank && (!ref.sizes || !ref.strides))
    return "has no sizes or strides";
  return std::nullopt;
}

std::optional<std::string> checkShape(c10::IntArrayRef shape,
                                      const TensorSig &sig) {
  bool matches = shape.size() == sig.shape.size();
  for (size_t i = 0; matches && i < shape.size(); ++i)
    matches = sig.shape[i] < 0 || sig.shape[i] == shape[i];
  if (matches)
    return std::nullopt;
  return "has shape " + shapeText(shape) + ", the kernel's is " +
         shapeText(sig.shape);
}

/// A tensor over the memory `ref` describes; nothing is copied.
at::Tensor wrap(const DiceMemRef &ref, at::ScalarType type) {
  c10::IntArrayRef sizes(ref.sizes, ref.rank), strides(ref.strides, ref.rank);
  return at::from_blob(ref.data, sizes, strides,
                       at::TensorOptions().dtype(type).device(deviceOf(ref)));
}

/// The kernel's outputs from the boxed stack: a Tensor, or a Tensor[].
std::vector<at::Tensor> unstack(torch::jit::Stack &stack) {
  std::vector<at::Tensor> outputs;
  for (c10::IValue &value : stack) {
    if (value.isTensorList()) {
      for (const at::Tensor &t : value.toTensorVector())
        outputs.push_back(t);
    } else if (value.isTensor()) {
      outputs.push_back(value.toTensor());
    } else {
      throw std::runtime_error("the kernel returned a " + value.tagKind() +
                               ", not tensors");
    }
  }
  return outputs;
}

int call(const std::string &fingerprint, size_t numInputs,
         const DiceMemRef *inputs, size_t numResults, DiceMemRef *results,
         char *error, size_t errorLength) {
  Runtime &rt = runtime();
  Kernel kernel;
  {
    std::lock_guard<std::mutex> lock(rt.mutex);
    auto it = rt.kernels.find(fingerprint);
    if (it == rt.kernels.end())
      return fail(error, errorLength,
                  "unknown kernel '" + fingerprint +
                      "': no opened manifest lists it");
    kernel = it->second;
  }
  std::string where = "kernel '" + fingerprint + "'";
  if (numInputs != kernel.inputs.size() || numResults != kernel.results.size())
    return fail(error, errorLength,
                where + " takes " + std::to_string(kernel.inputs.size()) +
                    " inputs and returns " +
                    std::to_string(kernel.results.size()) +
                    " results, called with " + std::to_string(numInputs) +
                    " inputs and " + std::to_string(numResults) + " results");
  if ((numInputs && !inputs) || (numResults && !results))
    return fail(error, errorLength, where + ": null descriptor array");

  std::optional<c10::OperatorHandle> op =
      c10::Dispatcher::singleton().findSchema({kernel.operatorName, ""});
  if (!op)
    return fail(error, errorLength,
                where + ": operator " + kernel.operatorName +
                    " is not registered (" + kernel.manifest +
                    " names no library that registers it)");

  torch::jit::Stack stack;
  bool onHost = true;
  for (size_t i = 0; i < numInputs; ++i) {
    std::string which = where + ": input " + std::to_string(i) + " ";
    if (std::optional<std::string> bad = checkRef(inputs[i], kernel.inputs[i]))
      return fail(error, errorLength, which + *bad);
    at::Tensor tensor = wrap(inputs[i], kernel.inputs[i].dtype);
    if (std::optional<std::string> bad =
            checkShape(tensor.sizes(), kernel.inputs[i]))
      return fail(error, errorLength, which + *bad);
    onHost &= inputs[i].device < 0;
    stack.emplace_back(std::move(tensor));
  }
  for (size_t i = 0; i < numResults; ++i)
    if (std::optional<std::string> bad =
            checkRef(results[i], kernel.results[i]))
      return fail(error, errorLength,
                  where + ": result " + std::to_string(i) + " " + *bad);

  // Kernels are CUDA code; host-side lowered code reaches them by copies.
  bool staged = onHost && !op->hasKernelForDispatchKey(c10::DispatchKey::CPU) &&
                op->hasKernelForDispatchKey(c10::DispatchKey::CUDA);
  if (staged) {
    if (!at::hasCUDA())
      return fail(error, errorLength,
                  where + " has only a CUDA implementation and this process "
                          "has no CUDA device");
    for (c10::IValue &value : stack)
      value = value.toTensor().to(c10::Device(c10::kCUDA, 0));
  }
  // The verifier judged the kernel on contiguous inputs only, and a kernel
  // may index its inputs as row-major without checking: a strided view (a
  // transposed weight, a slice) is handed over as a contiguous copy.
  for (c10::IValue &value : stack)
    value = value.toTensor().contiguous();

  op->callBoxed(&stack);
  std::vector<at::Tensor> outputs = unstack(stack);
  if (outputs.size() != numResults)
    return fail(error, errorLength,
                where + " returned " + std::to_string(outputs.size()) +
                    " tensors, the manifest says " +
                    std::to_string(numResults));
  for (size_t i = 0; i < numResults; ++i) {
    std::string which = where + ": result " + std::to_string(i) + " ";
    const at::Tensor &out = outputs[i];
    if (out.scalar_type() != kernel.results[i].dtype)
      return fail(error, errorLength,
                  which + "is " + dtypeName(out.scalar_type()) +
                      ", the manifest says " +
                      dtypeName(kernel.results[i].dtype));
    if (std::optional<std::string> bad =
            checkShape(out.sizes(), kernel.results[i]))
      return fail(error, errorLength, which + *bad);
    c10::IntArrayRef buffer(results[i].sizes, results[i].rank);
    if (results[i].data && !buffer.equals(out.sizes()))
      return fail(error, errorLength,
                  which + "buffer has shape " + shapeText(buffer) +
                      ", the kernel returned " + shapeText(out.sizes()));
  }

  // Only now write results: a failed call leaves the caller's buffers alone.
  for (size_t i = 0; i < numResults; ++i) {
    DiceMemRef &ref = results[i];
    at::Tensor out = outputs[i].to(deviceOf(ref));
    if (ref.data) {
      wrap(ref, kernel.results[i].dtype).copy_(out);
      continue;
    }
    for (int64_t d = 0; d < ref.rank; ++d) {
      ref.sizes[d] = out.size(d);
      ref.strides[d] = out.stride(d);
    }
    ref.data = out.data_ptr();
    std::lock_guard<std::mutex> lock(rt.mutex);
    rt.live.emplace(ref.data, std::move(out));
  }
  return 0;
}

} // namespace

extern "C" int dice_runtime_open(const char *manifest_path, char *error,
                                 size_t error_len) {
  if (!manifest_path)
    return fail(error, error_len, "no manifest path");
  try {
    std::string path = canonicalPath(manifest_path);
    Runtime &rt = runtime();
    std::lock_guard<std::mutex> lock(rt.mutex);
    struct stat st = {};
    bool exists = ::stat(path.c_str(), &st) == 0;
    auto it = rt.manifests.find(path);
    if (it != rt.manifests.end() && exists && it->second.inode == st.st_ino &&
        it->second.modified.tv_sec == st.st_mtim.tv_sec &&
        it->second.modified.tv_nsec == st.st_mtim.tv_nsec)
      return 0;
    std::vector<Kernel> kernels;
    Runtime::Opened opened;
    if (std::optional<std::string> bad =
            openManifest(path, kernels, opened.manifest))
      return fail(error, error_len, *bad);
    opened.inode = st.st_ino;
    opened.modified = st.st_mtim;
    for (Kernel &kernel : kernels)
      rt.kernels[kernel.fingerprint] = std::move(kernel);
    rt.manifests[path] = std::move(opened);
    return 0;
  } catch (const c10::Error &e) {
    return fail(error, error_len,
                std::string(manifest_path) + ": " + torchMessage(e));
  } catch (const std::exception &e) {
    return fail(error, error_len, std::string(manifest_path) + ": " + e.what());
  } catch (...) {
    return fail(error, error_len,
                std::string(manifest_path) + ": unknown error");
  }
}

extern "C" int dice_runtime_describe(const char *manifest_path, char *out,
                                     size_t out_len, size_t *needed,
                                     char *error, size_t error_len) {
  if (!manifest_path)
    return fail(error, error_len, "no manifest path");
  try {
    std::string path = canonicalPath(manifest_path);
    dice::Result<std::string> text = dice::Error();
    {
      Runtime &rt = runtime();
      std::lock_guard<std::mutex> lock(rt.mutex);
      auto it = rt.manifests.find(path);
      if (it == rt.manifests.end())
        return fail(error, error_len,
                    std::string(manifest_path) +
                        ": not opened (dice_runtime_open it first)");
      text = dice::printManifest(it->second.manifest);
    }
    if (!text)
      return fail(error, error_len, text.error().format());
    if (needed)
      *needed = text->size() + 1;
    if (out && out_len) {
      size_t n = std::min(out_len - 1, text->size());
      std::memcpy(out, text->data(), n);
      out[n] = '\0';
    }
    return 0;
  } catch (const std::exception &e) {
    return fail(error, error_len, std::string(manifest_path) + ": " + e.what());
  } catch (...) {
    return fail(error, error_len,
                std::string(manifest_path) + ": unknown error");
  }
}

extern "C" int dice_runtime_call(const char *fingerprint, size_t num_inputs,
                                 const DiceMemRef *inputs, size_t num_results,
                                 DiceMemRef *results, char *error,
                                 size_t error_len) {
  std::string fp = fingerprint ? fingerprint : "";
  try {
    return call(fp, num_inputs, inputs, num_results, results, error, error_len);
  } catch (const c10::Error &e) {
    return fail(error, error_len, "kernel '" + fp + "': " + torchMessage(e));
  } catch (const std::exception &e) {
    return fail(error, error_len, "kernel '" + fp + "': " + e.what());
  } catch (...) {
    return fail(error, error_len, "kernel '" + fp + "': unknown error");
  }
}

extern "C" int dice_runtime_release(void *data) {
  Runtime &rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mutex);
  auto it = rt.live.find(data);
  if (it == rt.live.end())
    return 1;
  rt.live.erase(it);
  return 0;
}

extern "C" size_t dice_runtime_live_results(void) {
  Runtime &rt = runtime();
  std::lock_guard<std::mutex> lock(rt.mutex);
  return rt.live.size();
}

extern "C" void dice_runtime_close(void) {
  Runtime &rt = runtime();
  std::unordered_multimap<void *, at::Tensor> released;
  {
    std::lock_guard<std::mutex> lock(rt.mutex);
    rt.manifests.clear();
    rt.kernels.clear();
    released.swap(rt.live);
  }
  // Tensors are freed outside the lock: a CUDA free may synchronize.
}
