#include <torch/extension.h>
#include <thrust/device_ptr.h>
#include <thrust/sort.h>
#include <thrust/execution_policy.h>

__global__ void negate_kernel(float *x, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    x[i] = -x[i];
}

// Sorting delegated to thrust.
torch::Tensor dice_forward(torch::Tensor x0) {
  auto out = x0.contiguous().clone(); // expect: torch_compute
  auto p = thrust::device_pointer_cast(out.data_ptr<float>());
  thrust::sort(thrust::device, p, p + out.numel()); // expect: vendor_library
  negate_kernel<<<1, 1>>>(out.data_ptr<float>(), 0);
  return out;
}
