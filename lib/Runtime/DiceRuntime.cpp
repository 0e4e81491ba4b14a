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

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <nlohmann/json.hpp>

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using nlohmann::json;

constexpr int kManifestVersion = 1;

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
  std::set<std::string> manifests;
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
constexpr const char *kDTypeNames[] = {
    "float32", "float16", "bfloat16", "float64", "int64",
    "int32",   "int16",   "int8",     "uint8",   "bool"};
static_assert(std::size(kScalarTypes) == DICE_DTYPE_BOOL + 1);

std::optional<at::ScalarType> scalarTypeOfCode(int32_t code) {
  if (code < 0 || code > DICE_DTYPE_BOOL)
    return std::nullopt;
  return kScalarTypes[code];
}

std::optional<at::ScalarType> scalarTypeOfName(const std::string &name) {
  for (size_t i = 0; i < std::size(kDTypeNames); ++i)
    if (name == kDTypeNames[i])
      return kScalarTypes[i];
  return std::nullopt;
}

const char *dtypeName(at::ScalarType type) {
  for (size_t i = 0; i < std::size(kScalarTypes); ++i)
    if (type == kScalarTypes[i])
      return kDTypeNames[i];
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

/// `name` relative to the directory of `manifest`, unless it is absolute.
std::string besideManifest(const std::string &manifest,
                           const std::string &name) {
  if (!name.empty() && name[0] == '/')
    return name;
  size_t slash = manifest.rfind('/');
  return slash == std::string::npos ? name
                                    : manifest.substr(0, slash + 1) + name;
}

/// "<path>:<line>:<column>" of byte `offset` of `text`.
std::string position(const std::string &path, const std::string &text,
                     size_t offset) {
  offset = std::min(offset, text.size());
  size_t line = 1 + std::count(text.begin(), text.begin() + offset, '\n');
  size_t lineStart = text.rfind('\n', offset ? offset - 1 : 0);
  size_t column = lineStart == std::string::npos || offset == 0
                      ? offset + 1
                      : offset - lineStart;
  return path + ":" + std::to_string(line) + ":" + std::to_string(column);
}

std::vector<TensorSig> parseTensors(const json &entry, const char *key) {
  std::vector<TensorSig> out;
  const json &list = entry.at(key);
  if (!list.is_array())
    throw std::runtime_error(std::string("'") + key + "' is not an array");
  for (const json &t : list) {
    TensorSig sig;
    sig.shape = t.at("shape").get<std::vector<int64_t>>();
    std::string dtype = t.at("dtype").get<std::string>();
    std::optional<at::ScalarType> type = scalarTypeOfName(dtype);
    if (!type)
      throw std::runtime_error("unknown dtype '" + dtype + "'");
    sig.dtype = *type;
    out.push_back(std::move(sig));
  }
  return out;
}

/// Parses a manifest and loads its libraries; on failure returns a message.
std::optional<std::string> openManifest(const std::string &path,
                                        std::vector<Kernel> &kernels) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return "cannot read manifest '" + path + "': " + std::strerror(errno);
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  json manifest;
  try {
    manifest = json::parse(text);
  } catch (const json::parse_error &e) {
    // nlohmann's byte is one past the offending character.
    return position(path, text, e.byte ? e.byte - 1 : 0) +
           ": malformed manifest: " + e.what();
  }
  if (!manifest.is_object() || !manifest.contains("version") ||
      manifest["version"] != kManifestVersion)
    return path + ": not a version 1 DICE manifest";
  if (!manifest.contains("kernels") || !manifest["kernels"].is_object())
    return path + ": the manifest has no 'kernels' object";

  auto &dispatcher = c10::Dispatcher::singleton();
  for (const auto &[fingerprint, entry] : manifest["kernels"].items()) {
    std::string where = path + ": kernel '" + fingerprint + "'";
    Kernel kernel;
    kernel.fingerprint = fingerprint;
    kernel.manifest = path;
    std::optional<std::string> library;
    try {
      kernel.operatorName = entry.at("operator").get<std::string>();
      kernel.inputs = parseTensors(entry, "inputs");
      kernel.results = parseTensors(entry, "results");
      if (entry.contains("library") && !entry["library"].is_null())
        library = entry["library"].get<std::string>();
    } catch (const std::exception &e) {
      return where + ": " + e.what();
    }
    // A kernel whose op is registered already (its library loaded under
    // another path, or a test's own registration) is not loaded again:
    // registering a name twice kills the process.
    if (library && !dispatcher.findSchema({kernel.operatorName, ""})) {
      std::string file = besideManifest(path, *library);
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
  return std::nullopt;
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
    // One spelling per file, so that reopening is recognised.
    std::string path = manifest_path;
    if (char *real = ::realpath(manifest_path, nullptr)) {
      path = real;
      std::free(real);
    }
    Runtime &rt = runtime();
    std::lock_guard<std::mutex> lock(rt.mutex);
    if (rt.manifests.count(path))
      return 0;
    std::vector<Kernel> kernels;
    if (std::optional<std::string> bad = openManifest(path, kernels))
      return fail(error, error_len, *bad);
    for (Kernel &kernel : kernels)
      rt.kernels[kernel.fingerprint] = std::move(kernel);
    rt.manifests.insert(path);
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
