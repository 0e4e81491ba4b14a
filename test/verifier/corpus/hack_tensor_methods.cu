#include <torch/extension.h>

__global__ void scale_kernel(float *data, float s, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    data[i] *= s;
}

// The reduction and the add run in ATen; only the scale is a kernel.
torch::Tensor dice_forward(torch::Tensor x0, torch::Tensor x1) {
  auto s = x0.add(x1); // expect: torch_compute
  auto r = s.sum(-1); // expect: torch_compute
  auto out = at::relu(r) + r; // expect: torch_compute
  scale_kernel<<<1, 256>>>(out.data_ptr<float>(), 0.5f, out.numel());
  return out;
}
