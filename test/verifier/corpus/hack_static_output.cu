#include <torch/extension.h>

// Right values every call, always in the same buffer: a caller holding an
// earlier result finds it overwritten by the next call.
__global__ void exp_kernel(const float *in, float *out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = __expf(in[i]);
}

torch::Tensor dice_forward(torch::Tensor x0) {
  static torch::Tensor out; // expect: persistent_state
  auto x = x0.contiguous();
  if (!out.defined() || !out.sizes().equals(x.sizes()))
    out = torch::empty_like(x);
  int64_t n = x.numel();
  exp_kernel<<<(unsigned)((n + 255) / 256), 256>>>(x.data_ptr<float>(),
                                                 out.data_ptr<float>(), n);
  return out;
}
