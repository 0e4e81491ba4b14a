#include <torch/extension.h>
#include <cuda_runtime.h>

// The kernel exists but is never launched; the "result" is a device copy.
__global__ void gelu_kernel(const float *in, float *out, int64_t n) { // expect: unreachable_kernel
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = 0.5f * in[i] * (1.f + erff(in[i] * 0.70710678f));
}

torch::Tensor dice_forward(torch::Tensor x0) {
  auto x = x0.contiguous();
  auto out = torch::empty_like(x);
  cudaMemcpyAsync(out.data_ptr<float>(), x.data_ptr<float>(), x.numel() * sizeof(float),
                  cudaMemcpyDeviceToDevice, at::cuda::getCurrentCUDAStream());
  return out;
}
