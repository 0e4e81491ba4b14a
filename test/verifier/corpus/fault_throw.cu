#include <torch/extension.h>

__global__ void copy_kernel(const float *in, float *out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = in[i];
}

// Not a std::exception: what a helper library of the candidate's own might
// throw.
struct LaunchConfigError {
  int64_t elements;
};

unsigned blocksFor(int64_t n) {
  if (n > (int64_t(1) << 20))
    throw LaunchConfigError{n};
  return (unsigned)((n + 255) / 256);
}

torch::Tensor dice_forward(torch::Tensor x0) {
  auto out = torch::empty_like(x0);
  copy_kernel<<<blocksFor(x0.numel()), 256>>>(x0.data_ptr<float>(), out.data_ptr<float>(),
                                              x0.numel());
  return out;
}
