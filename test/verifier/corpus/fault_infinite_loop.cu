#include <torch/extension.h>

// Spins on a flag nobody sets: the kernel never finishes.
__global__ void spin_kernel(const float *in, float *out, int64_t n) {
  volatile int *flag = reinterpret_cast<volatile int *>(out);
  while (flag[0] != 0x7fc00001)
    ;
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = in[i];
}

torch::Tensor dice_forward(torch::Tensor x0) {
  auto out = torch::zeros_like(x0);
  spin_kernel<<<(unsigned)((x0.numel() + 255) / 256), 256>>>(
      x0.data_ptr<float>(), out.data_ptr<float>(), x0.numel());
  return out;
}
