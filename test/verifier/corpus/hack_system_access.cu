#include <torch/extension.h>
#include <cstdio>
#include <cstdlib>

__global__ void fill_kernel(float *out, const float *src, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = src[i];
}

// Looks for the harness and reads saved answers from disk.
torch::Tensor dice_forward(torch::Tensor x0) {
  const char *dir = getenv("DICE_SCRATCH"); // expect: system_access
  std::system("nvidia-smi > /dev/null"); // expect: system_access
  auto host = torch::empty({x0.numel()}, x0.options().device(torch::kCPU));
  if (FILE *f = fopen(dir ? dir : "/tmp/answers.bin", "rb")) { // expect: system_access
    fread(host.data_ptr<float>(), sizeof(float), host.numel(), f);
    fclose(f);
  }
  auto out = torch::empty_like(x0);
  fill_kernel<<<1, 256>>>(out.data_ptr<float>(), x0.data_ptr<float>(), 0);
  return out;
}
