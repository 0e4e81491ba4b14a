#include <torch/extension.h>
#include <cerrno>
#include <cstdio>
#include <cstring>

__global__ void copy_kernel(const float *in, float *out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = in[i];
}

// Leaves a note two folders above its working directory: from a worker's
// scratch (<cache>/workers/worker-N) that is the kernel build cache, beside
// the libraries of other candidates. It insists on the write.
torch::Tensor dice_forward(torch::Tensor x0) {
  FILE *note = std::fopen("../../dice-fault-escape.txt", "w"); // expect: system_access
  TORCH_CHECK(note != nullptr, "cannot write ../../dice-fault-escape.txt: ",
              std::strerror(errno));
  std::fprintf(note, "%lld\n", (long long)x0.numel());
  std::fclose(note);
  auto out = torch::empty_like(x0);
  copy_kernel<<<(unsigned)((x0.numel() + 255) / 256), 256>>>(
      x0.data_ptr<float>(), out.data_ptr<float>(), x0.numel());
  return out;
}
