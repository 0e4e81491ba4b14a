#include <torch/extension.h>

__global__ void copy_kernel(const float *in, float *out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = in[i];
}

// Waits on the host for a flag that nothing ever sets: dice_forward never
// returns, and no kernel is launched.
torch::Tensor dice_forward(torch::Tensor x0) {
  volatile int64_t ready = 0;
  while (ready != x0.numel())
    ;
  auto out = torch::empty_like(x0);
  copy_kernel<<<(unsigned)((x0.numel() + 255) / 256), 256>>>(
      x0.data_ptr<float>(), out.data_ptr<float>(), x0.numel());
  return out;
}
