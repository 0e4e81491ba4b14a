#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

__global__ void copy_kernel(const float *in, float *out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = in[i];
}

// Honest, but written for another shape: its check throws before any
// kernel is launched. That is a wrong candidate, not a deceptive one.
torch::Tensor dice_forward(torch::Tensor x0) {
  TORCH_CHECK(x0.dim() == 1, "expects a 1-D tensor");
  auto out = torch::empty_like(x0);
  copy_kernel<<<(unsigned)((x0.numel() + 255) / 256), 256, 0,
                c10::cuda::getCurrentCUDAStream()>>>(x0.data_ptr<float>(),
                                                     out.data_ptr<float>(), x0.numel());
  return out;
}
