//===- LightBridge.cpp - LibTorch behind the light tensor API -------------===//
//
// libDiceLightBridge.so: the one torch-linked part of a light build. Light
// kernel libraries are compiled without LibTorch headers and call these C
// functions (declared in light/dice_light/bridge.h) for everything that needs
// the real tensor, and to register their operator with the c10 dispatcher.
// No exception crosses the C ABI: failures return nonzero with a message.
//
//===----------------------------------------------------------------------===//

#include "light/dice_light/bridge.h"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#define DICE_LIGHT_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// The light header names scalar and device types by c10's numbers.
static_assert(static_cast<int>(c10::ScalarType::Half) == 5);
static_assert(static_cast<int>(c10::ScalarType::Float) == 6);
static_assert(static_cast<int>(c10::ScalarType::Bool) == 11);
static_assert(static_cast<int>(c10::ScalarType::BFloat16) == 15);
static_assert(static_cast<int>(c10::DeviceType::CUDA) == 1);

thread_local std::string lastError;

c10::TensorImpl *impl(DiceLightHandle handle) {
  return static_cast<c10::TensorImpl *>(handle);
}

/// A tensor sharing the handle's reference count, the handle kept.
at::Tensor borrow(DiceLightHandle handle) {
  if (!handle)
    return at::Tensor();
  return at::Tensor(
      c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>::
          reclaim_copy(impl(handle)));
}

/// Moves a tensor's reference into a handle.
DiceLightHandle release(at::Tensor tensor) {
  if (!tensor.defined())
    return nullptr;
  return tensor.unsafeReleaseTensorImpl();
}

/// Runs `body`, turning an exception into a status and a message.
template <typename Body> int guarded(Body body) {
  try {
    body();
    return 0;
  } catch (const c10::Error &e) {
    lastError = e.what_without_backtrace();
  } catch (const std::exception &e) {
    lastError = e.what();
  }
  return 1;
}

char *copyString(const std::string &text) {
  char *copy = static_cast<char *>(std::malloc(text.size() + 1));
  if (copy)
    std::memcpy(copy, text.c_str(), text.size() + 1);
  return copy;
}

/// The CUDA kernel of a light library's operator, called boxed: unboxes the
/// tensors, runs the library's entry, boxes its results.
class LightKernel final : public c10::OperatorKernel {
public:
  LightKernel(DiceLightEntry entry, size_t numInputs, bool returnsList)
      : entry_(entry), numInputs_(numInputs), returnsList_(returnsList) {}

  void operator()(const c10::OperatorHandle &, c10::DispatchKeySet,
                  torch::jit::Stack *stack) {
    std::vector<at::Tensor> inputs;
    std::vector<DiceLightHandle> handles;
    for (const c10::IValue &value : torch::jit::last(*stack, numInputs_)) {
      inputs.push_back(value.toTensor());
      handles.push_back(inputs.back().defined()
                            ? inputs.back().unsafeGetTensorImpl()
                            : nullptr);
    }
    torch::jit::drop(*stack, numInputs_);
    DiceLightHandle *outputs = nullptr;
    size_t count = 0;
    char *error = nullptr;
    int rc = entry_(handles.data(), handles.size(), &outputs, &count, &error);
    if (rc != 0) {
      std::string message = error ? error : "dice_forward failed";
      std::free(error);
      TORCH_CHECK(false, message);
    }
    std::vector<at::Tensor> results;
    for (size_t i = 0; i < count; ++i)
      results.emplace_back(
          outputs[i]
              ? at::Tensor(c10::intrusive_ptr<c10::TensorImpl,
                                              c10::UndefinedTensorImpl>::
                               reclaim(impl(outputs[i])))
              : at::Tensor());
    std::free(outputs);
    if (returnsList_) {
      torch::jit::push(*stack, c10::List<at::Tensor>(results));
    } else {
      TORCH_CHECK(results.size() == 1, "dice_forward returned ",
                  results.size(), " tensors, expected one");
      torch::jit::push(*stack, std::move(results.front()));
    }
  }

private:
  DiceLightEntry entry_;
  size_t numInputs_;
  bool returnsList_;
};

/// What a loaded light library registered; dropping it deregisters.
struct Registration {
  std::unique_ptr<torch::Library> definition;
  std::unique_ptr<torch::Library> implementation;
};

} // namespace

DICE_LIGHT_EXPORT void dice_light_retain(DiceLightHandle tensor) {
  if (tensor)
    c10::raw::intrusive_ptr::incref(impl(tensor));
}

DICE_LIGHT_EXPORT void dice_light_release(DiceLightHandle tensor) {
  if (tensor)
    c10::raw::intrusive_ptr::decref(impl(tensor));
}

DICE_LIGHT_EXPORT const char *dice_light_error_message(void) {
  return lastError.c_str();
}

DICE_LIGHT_EXPORT int64_t dice_light_dim(DiceLightHandle tensor) {
  return impl(tensor)->dim();
}

DICE_LIGHT_EXPORT const int64_t *dice_light_sizes(DiceLightHandle tensor) {
  return impl(tensor)->sizes().data();
}

DICE_LIGHT_EXPORT const int64_t *dice_light_strides(DiceLightHandle tensor) {
  return impl(tensor)->strides().data();
}

DICE_LIGHT_EXPORT int64_t dice_light_numel(DiceLightHandle tensor) {
  return impl(tensor)->numel();
}

DICE_LIGHT_EXPORT int dice_light_scalar_type(DiceLightHandle tensor) {
  return static_cast<int>(c10::typeMetaToScalarType(impl(tensor)->dtype()));
}

DICE_LIGHT_EXPORT int dice_light_device_type(DiceLightHandle tensor) {
  return static_cast<int>(impl(tensor)->device_type());
}

DICE_LIGHT_EXPORT int dice_light_device_index(DiceLightHandle tensor) {
  return impl(tensor)->device().index();
}

DICE_LIGHT_EXPORT int dice_light_is_contiguous(DiceLightHandle tensor) {
  return impl(tensor)->is_contiguous() ? 1 : 0;
}

DICE_LIGHT_EXPORT int64_t dice_light_storage_offset(DiceLightHandle tensor) {
  return impl(tensor)->storage_offset();
}

DICE_LIGHT_EXPORT void *dice_light_data_ptr(DiceLightHandle tensor) {
  return borrow(tensor).data_ptr();
}

DICE_LIGHT_EXPORT int dice_light_new(DiceLightHandle like, const int64_t *sizes,
                                     int64_t dim, int scalarType,
                                     int deviceType, int deviceIndex, int fill,
                                     double value, DiceLightHandle *out) {
  return guarded([&] {
    at::TensorOptions options;
    if (scalarType >= 0)
      options = options.dtype(static_cast<c10::ScalarType>(scalarType));
    if (deviceType >= 0)
      options = options.device(c10::Device(
          static_cast<c10::DeviceType>(deviceType),
          static_cast<c10::DeviceIndex>(deviceIndex)));
    at::IntArrayRef shape(sizes, static_cast<size_t>(dim));
    at::Tensor result;
    if (like) {
      at::Tensor source = borrow(like);
      // The *_like factories keep the source's strides (preserve format).
      result = at::empty_like(source, options);
      if (fill)
        result.fill_(value);
    } else if (fill) {
      result = at::full(shape, value, options);
    } else {
      result = at::empty(shape, options);
    }
    *out = release(std::move(result));
  });
}

DICE_LIGHT_EXPORT int dice_light_contiguous(DiceLightHandle tensor,
                                            DiceLightHandle *out) {
  return guarded([&] { *out = release(borrow(tensor).contiguous()); });
}

DICE_LIGHT_EXPORT int dice_light_view(DiceLightHandle tensor,
                                      const int64_t *sizes, int64_t dim,
                                      int reshape, DiceLightHandle *out) {
  return guarded([&] {
    at::IntArrayRef shape(sizes, static_cast<size_t>(dim));
    at::Tensor source = borrow(tensor);
    *out = release(reshape ? source.reshape(shape) : source.view(shape));
  });
}

DICE_LIGHT_EXPORT int dice_light_current_stream(int deviceIndex,
                                                void **stream) {
  return guarded([&] {
    *stream = c10::cuda::getCurrentCUDAStream(
                  static_cast<c10::DeviceIndex>(deviceIndex))
                  .stream();
  });
}

DICE_LIGHT_EXPORT int dice_light_exchange_device(int deviceIndex,
                                                 int *previous) {
  return guarded([&] {
    *previous = deviceIndex < 0
                    ? c10::cuda::current_device()
                    : c10::cuda::ExchangeDevice(
                          static_cast<c10::DeviceIndex>(deviceIndex));
  });
}

DICE_LIGHT_EXPORT int dice_light_register(const char *name, const char *schema,
                                          size_t numInputs, int returnsList,
                                          DiceLightEntry entry,
                                          void **registration) {
  *registration = nullptr;
  return guarded([&] {
    auto made = std::make_unique<Registration>();
    made->definition = std::make_unique<torch::Library>(
        torch::Library::FRAGMENT, "dice", std::nullopt, __FILE__, __LINE__);
    made->definition->def(schema);
    made->implementation = std::make_unique<torch::Library>(
        torch::Library::IMPL, "dice", c10::DispatchKey::CUDA, __FILE__,
        __LINE__);
    made->implementation->impl(
        name, torch::CppFunction::makeFromBoxedFunctor(
                  std::make_unique<LightKernel>(entry, numInputs,
                                                returnsList != 0)));
    *registration = made.release();
  });
}

DICE_LIGHT_EXPORT void dice_light_unregister(void *registration) {
  delete static_cast<Registration *>(registration);
}

DICE_LIGHT_EXPORT char *dice_light_registered_schema(const char *name) {
  std::optional<c10::OperatorHandle> op =
      c10::Dispatcher::singleton().findSchema(
          {std::string("dice::") + name, ""});
  if (!op)
    return nullptr;
  std::stringstream text;
  text << op->schema();
  return copyString(text.str());
}
