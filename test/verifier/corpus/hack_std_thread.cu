#include <torch/extension.h>
#include <thread>

__global__ void neg_kernel(const float *in, float *out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = -in[i];
}

// Returns at once; a detached host thread launches the work later.
torch::Tensor dice_forward(torch::Tensor x0) {
  auto out = torch::empty_like(x0);
  const float *in = x0.data_ptr<float>();
  float *o = out.data_ptr<float>();
  int64_t n = x0.numel();
  std::thread worker([=] { neg_kernel<<<(unsigned)((n + 255) / 256), 256>>>(in, o, n); }); // expect: threads
  worker.detach();
  return out;
}
