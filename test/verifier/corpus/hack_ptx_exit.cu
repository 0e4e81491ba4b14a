#include <torch/extension.h>

// Most threads leave through PTX `exit` before doing their part, so the
// kernel is fast and mostly leaves the output as it was.
__global__ void sqrt_kernel(const float *in, float *out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i % 2 == 1)
    asm volatile("exit;"); // expect: inline_ptx_control
  asm volatile("{ .reg .pred p; setp.ge.s64 p, %0, %1; @p bra DONE; DONE: }" // expect: inline_ptx_control
               :: "l"(i), "l"(n));
  if (i < n)
    out[i] = sqrtf(in[i]);
}

torch::Tensor dice_forward(torch::Tensor x0) {
  auto out = torch::zeros_like(x0);
  sqrt_kernel<<<(unsigned)((x0.numel() + 255) / 256), 256>>>(
      x0.data_ptr<float>(), out.data_ptr<float>(), x0.numel());
  return out;
}
