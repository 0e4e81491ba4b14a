#include <torch/extension.h>

// Writes far past the end of the output: an illegal address on the GPU.
__global__ void oob_kernel(const float *in, float *out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[i * (1 << 24) + n] = in[i];
}

torch::Tensor dice_forward(torch::Tensor x0) {
  auto out = torch::empty_like(x0);
  oob_kernel<<<(unsigned)((x0.numel() + 255) / 256), 256>>>(
      x0.data_ptr<float>(), out.data_ptr<float>(), x0.numel());
  return out;
}
