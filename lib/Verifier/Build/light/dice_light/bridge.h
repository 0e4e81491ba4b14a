// The C ABI between a light-built kernel library and libDiceLightBridge.so.
//
// A light library sees no LibTorch header; everything that needs the real
// tensor (allocation, metadata, the current stream, registration with the
// c10 dispatcher) is a call into the bridge, which is built against
// LibTorch. A tensor crosses as an opaque handle: a c10::TensorImpl pointer
// that owns one reference (null is the undefined tensor). Calls that can
// fail return nonzero and leave a message for dice_light_error_message().
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void *DiceLightHandle;

/// The generated entry of a light library: calls dice_forward on borrowed
/// `inputs` and returns owned handles in a malloc'ed `*outputs` array, or
/// nonzero and a malloc'ed message in `*error`. The caller frees both.
typedef int (*DiceLightEntry)(const DiceLightHandle *inputs, size_t numInputs,
                              DiceLightHandle **outputs, size_t *numOutputs,
                              char **error);

/// Ownership.
void dice_light_retain(DiceLightHandle tensor);
void dice_light_release(DiceLightHandle tensor);

/// The message of the calling thread's last failed call.
const char *dice_light_error_message(void);

/// Metadata; `tensor` is defined. Scalar and device types use c10's
/// numbering (c10::ScalarType, c10::DeviceType).
int64_t dice_light_dim(DiceLightHandle tensor);
const int64_t *dice_light_sizes(DiceLightHandle tensor);
const int64_t *dice_light_strides(DiceLightHandle tensor);
int64_t dice_light_numel(DiceLightHandle tensor);
int dice_light_scalar_type(DiceLightHandle tensor);
int dice_light_device_type(DiceLightHandle tensor);
int dice_light_device_index(DiceLightHandle tensor);
int dice_light_is_contiguous(DiceLightHandle tensor);
int64_t dice_light_storage_offset(DiceLightHandle tensor);
/// Null for a tensor without storage.
void *dice_light_data_ptr(DiceLightHandle tensor);

/// A new tensor of `sizes`; `like` (optional) supplies what the options do
/// not (`*_like` factories keep its strides). A negative dtype or device
/// type means unset. `fill`: 0 leaves it uninitialised, 1 fills `value`.
int dice_light_new(DiceLightHandle like, const int64_t *sizes, int64_t dim,
                   int scalarType, int deviceType, int deviceIndex, int fill,
                   double value, DiceLightHandle *out);
int dice_light_contiguous(DiceLightHandle tensor, DiceLightHandle *out);
/// `reshape` nonzero: Tensor::reshape, else Tensor::view.
int dice_light_view(DiceLightHandle tensor, const int64_t *sizes, int64_t dim,
                    int reshape, DiceLightHandle *out);

/// c10::cuda::getCurrentCUDAStream(deviceIndex).stream().
int dice_light_current_stream(int deviceIndex, void **stream);
/// Makes `deviceIndex` current; `*previous` receives the one before.
int dice_light_exchange_device(int deviceIndex, int *previous);

/// Defines `dice::<schema>` and registers `entry` as its CUDA kernel until
/// dice_light_unregister(*registration).
int dice_light_register(const char *name, const char *schema, size_t numInputs,
                        int returnsList, DiceLightEntry entry,
                        void **registration);
void dice_light_unregister(void *registration);

/// The registered schema of `dice::<name>` as text, malloc'ed; null when
/// there is none.
char *dice_light_registered_schema(const char *name);

#ifdef __cplusplus
}
#endif
