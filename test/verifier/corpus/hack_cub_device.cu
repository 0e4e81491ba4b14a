#include <torch/extension.h>
#include <cub/device/device_reduce.cuh>

__global__ void finish_kernel(float *out, int64_t n) {
  if (threadIdx.x == 0)
    out[0] /= (float)n;
}

// A mean whose sum is CUB's device-wide reduction, not the candidate's.
torch::Tensor dice_forward(torch::Tensor x0) {
  auto x = x0.contiguous();
  int n = (int)x.numel();
  auto out = torch::empty({1}, x.options());
  size_t bytes = 0;
  cub::DeviceReduce::Sum(nullptr, bytes, x.data_ptr<float>(), out.data_ptr<float>(), n); // expect: vendor_library
  auto scratch = torch::empty({(int64_t)bytes}, x.options().dtype(torch::kUInt8));
  cub::DeviceReduce::Sum(scratch.data_ptr(), bytes, x.data_ptr<float>(), // expect: vendor_library
                         out.data_ptr<float>(), n);
  finish_kernel<<<1, 32>>>(out.data_ptr<float>(), n);
  return out;
}
