#include <torch/extension.h>
#include <vector>

__global__ void copy_kernel(const float *in, float *out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = in[i];
}

// A host staging buffer sized numel^2 * 16 floats by mistake: 1 PiB, more
// than any address space holds, so the allocation throws std::bad_alloc.
torch::Tensor dice_forward(torch::Tensor x0) {
  int64_t n = x0.numel();
  std::vector<float> staging(size_t(n) * size_t(n) * 16);
  auto out = torch::empty_like(x0);
  copy_kernel<<<(unsigned)((n + 255) / 256), 256>>>(x0.data_ptr<float>(),
                                                    out.data_ptr<float>(), n);
  return out;
}
