#include <torch/extension.h>

__global__ void copy_kernel(const float *in, float *out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = in[i];
}

// Reads a device pointer on the host: a segmentation fault in the worker.
torch::Tensor dice_forward(torch::Tensor x0) {
  auto out = torch::empty_like(x0);
  const float *device = x0.data_ptr<float>();
  volatile float first = device[0];
  (void)first;
  copy_kernel<<<(unsigned)((x0.numel() + 255) / 256), 256>>>(
      device, out.data_ptr<float>(), x0.numel());
  return out;
}
