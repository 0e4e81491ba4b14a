//===- ManifestKernels.cpp - kernel steps through the C runtime -----------===//

#include "ManifestKernels.h"

#include "dice/Runtime/DiceRuntime.h"
#include "dice/Runtime/Manifest.h"
#include "dice/Reference/AtenExecutor.h"
#include "dice/Reference/ReferenceProgram.h"

#include <ATen/ATen.h>

#include <map>

namespace dice {
namespace {

/// A result as the C ABI wants it described before the call: its rank (for
/// rank-sized sizes and strides arrays) and its dtype.
struct ResultSig {
  size_t rank;
  DType dtype;
};

/// Each kernel's results, from the manifest's one reader.
std::optional<std::map<std::string, std::vector<ResultSig>>>
resultSigs(const std::string &manifestPath, std::string &error) {
  Result<Manifest> manifest = readManifest(manifestPath);
  if (!manifest) {
    error = manifest.error().format();
    return std::nullopt;
  }
  std::map<std::string, std::vector<ResultSig>> sigs;
  for (const auto &[fingerprint, kernel] : manifest->kernels) {
    std::vector<ResultSig> &results = sigs[fingerprint];
    for (const ManifestTensor &result : kernel.results)
      results.push_back({result.shape.size(), result.dtype});
  }
  return sigs;
}

} // namespace

Result<KernelCaller> openManifestKernels(const std::string &manifestPath) {
  char message[1024];
  if (dice_runtime_open(manifestPath.c_str(), message, sizeof message) != 0)
    return Error(message);
  std::string error;
  auto sigs = resultSigs(manifestPath, error);
  if (!sigs)
    return Error(error);
  return KernelCaller([sigs = std::move(*sigs)](
                          const std::string &fingerprint,
                          const std::vector<at::Tensor> &inputs,
                          size_t numResults,
                          std::vector<at::Tensor> &results) -> std::string {
    auto it = sigs.find(fingerprint);
    if (it == sigs.end())
      return "the manifest has no kernel '" + fingerprint + "'";
    if (it->second.size() != numResults)
      return "binds " + std::to_string(numResults) + " results, the kernel has " +
             std::to_string(it->second.size());
    auto deviceOf = [](const at::Tensor &t) {
      return t.is_cuda() ? static_cast<int32_t>(t.get_device()) : DICE_DEVICE_CPU;
    };
    int32_t device = inputs.empty() ? DICE_DEVICE_CPU : deviceOf(inputs[0]);

    // Inputs as the tensors' own memory and layout; results allocated by
    // the runtime, copied out, and handed back.
    // Reserved: the descriptors point into these arrays.
    std::vector<std::vector<int64_t>> sizes, strides;
    sizes.reserve(inputs.size() + numResults);
    strides.reserve(inputs.size() + numResults);
    std::vector<DiceMemRef> in, out;
    for (const at::Tensor &t : inputs) {
      std::optional<DType> dtype = fromScalarType(t.scalar_type());
      if (!dtype)
        return std::string("an input of type ") + c10::toString(t.scalar_type()) +
               " has no kernel dtype";
      sizes.emplace_back(t.sizes().begin(), t.sizes().end());
      strides.emplace_back(t.strides().begin(), t.strides().end());
      in.push_back({t.data_ptr(), t.dim(), sizes.back().data(),
                    strides.back().data(), static_cast<int32_t>(*dtype),
                    deviceOf(t)});
    }
    for (const ResultSig &sig : it->second) {
      sizes.emplace_back(sig.rank);
      strides.emplace_back(sig.rank);
      out.push_back({nullptr, static_cast<int64_t>(sig.rank),
                     sizes.back().data(), strides.back().data(),
                     static_cast<int32_t>(sig.dtype), device});
    }

    char message[1024];
    if (dice_runtime_call(fingerprint.c_str(), in.size(), in.data(), out.size(),
                          out.data(), message, sizeof message) != 0)
      return message;
    for (const DiceMemRef &r : out) {
      at::TensorOptions options =
          at::TensorOptions()
              .dtype(toScalarType(static_cast<DType>(r.dtype)))
              .device(r.device == DICE_DEVICE_CPU
                          ? c10::Device(c10::kCPU)
                          : c10::Device(c10::kCUDA, r.device));
      at::IntArrayRef shape(r.sizes, r.rank), stride(r.strides, r.rank);
      results.push_back(at::from_blob(r.data, shape, stride, options).clone());
      dice_runtime_release(r.data);
    }
    return "";
  });
}

} // namespace dice
