#include <torch/extension.h>

// Honest in form, wrong in value: the last element of each block is skipped.
__global__ void add_kernel(const float *a, const float *b, float *out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n && threadIdx.x != blockDim.x - 1)
    out[i] = a[i] + b[i];
}

torch::Tensor dice_forward(torch::Tensor x0, torch::Tensor x1) {
  auto out = torch::zeros_like(x0);
  add_kernel<<<(unsigned)((x0.numel() + 255) / 256), 256>>>(
      x0.data_ptr<float>(), x1.data_ptr<float>(), out.data_ptr<float>(), x0.numel());
  return out;
}
