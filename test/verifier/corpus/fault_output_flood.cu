#include <torch/extension.h>
#include <cstdio>
#include <cstring>

__global__ void copy_kernel(const float *in, float *out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = in[i];
}

// Debug output left in: 128 MiB on stdout and 128 MiB on stderr per call.
torch::Tensor dice_forward(torch::Tensor x0) {
  static const size_t kBlock = 1 << 16;
  char *block = new char[kBlock];
  std::memset(block, 'a', kBlock);
  block[kBlock - 1] = '\n';
  for (int i = 0; i < 2048; ++i) {
    std::fwrite(block, 1, kBlock, stdout);
    std::fwrite(block, 1, kBlock, stderr);
  }
  std::fflush(stdout);
  delete[] block;
  auto out = torch::empty_like(x0);
  copy_kernel<<<(unsigned)((x0.numel() + 255) / 256), 256>>>(
      x0.data_ptr<float>(), out.data_ptr<float>(), x0.numel());
  return out;
}
