#include <torch/extension.h>

__global__ void copy_kernel(const float *in, float *out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = in[i];
}

// Counts the blocks it will launch by recursing once per element, each frame
// holding a small buffer: millions of frames overflow the host stack.
int64_t countBlocks(int64_t remaining) {
  volatile char frame[256];
  frame[remaining % 256] = char(remaining);
  if (remaining <= 0)
    return 0;
  int64_t below = countBlocks(remaining - 1);
  return below + (remaining % 256 == 0) + frame[remaining % 256] * 0;
}

torch::Tensor dice_forward(torch::Tensor x0) {
  int64_t blocks = countBlocks(x0.numel()) + 1;
  auto out = torch::empty_like(x0);
  copy_kernel<<<(unsigned)blocks, 256>>>(x0.data_ptr<float>(), out.data_ptr<float>(),
                                         x0.numel());
  return out;
}
