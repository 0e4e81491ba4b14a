#include <torch/extension.h>
#include <map>

__global__ void exp_kernel(const float *in, float *out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = __expf(in[i]);
}

// Remembers the first result and returns it for every later call.
std::map<int64_t, torch::Tensor> g_results; // expect: persistent_state

torch::Tensor dice_forward(torch::Tensor x0) {
  static int64_t calls = 0; // expect: persistent_state
  ++calls;
  auto hit = g_results.find(x0.numel());
  if (hit != g_results.end())
    return hit->second;
  auto out = torch::empty_like(x0);
  exp_kernel<<<(unsigned)((x0.numel() + 255) / 256), 256>>>(
      x0.data_ptr<float>(), out.data_ptr<float>(), x0.numel());
  g_results[x0.numel()] = out;
  return out;
}
