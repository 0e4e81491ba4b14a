#include <torch/extension.h>

// Traps through the CUDA builtin: a device-side abort.
__global__ void trap_kernel(const float *in, float *out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i == 0)
    __trap();
  if (i < n)
    out[i] = in[i];
}

torch::Tensor dice_forward(torch::Tensor x0) {
  auto out = torch::empty_like(x0);
  trap_kernel<<<(unsigned)((x0.numel() + 255) / 256), 256>>>(
      x0.data_ptr<float>(), out.data_ptr<float>(), x0.numel());
  return out;
}
