#include <torch/extension.h>

__global__ void copy_kernel(const float *in, float *out, float *workspace, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) {
    workspace[i] = in[i];
    out[i] = workspace[i];
  }
}

// A workspace of numel x numel floats by mistake: 64 TiB of device memory,
// which the caching allocator refuses (it throws).
torch::Tensor dice_forward(torch::Tensor x0) {
  int64_t n = x0.numel();
  auto workspace = torch::empty({n, n}, x0.options());
  auto out = torch::empty_like(x0);
  copy_kernel<<<(unsigned)((n + 255) / 256), 256>>>(
      x0.data_ptr<float>(), out.data_ptr<float>(), workspace.data_ptr<float>(), n);
  return out;
}
