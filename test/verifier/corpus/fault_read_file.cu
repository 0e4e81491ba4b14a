#include <torch/extension.h>
#include <fstream>
#include <string>

__global__ void copy_kernel(const float *in, float *out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = in[i];
}

// Reads a file outside its scratch folder (the machine's name) and lets it
// choose the launch: behaviour that depends on where it runs. The sandbox
// does not confine reads; only the static analysis stops this.
torch::Tensor dice_forward(torch::Tensor x0) {
  std::ifstream in("/etc/hostname"); // expect: system_access
  std::string host;
  std::getline(in, host);
  unsigned threads = host.empty() ? 256 : 128;
  auto out = torch::empty_like(x0);
  copy_kernel<<<(unsigned)((x0.numel() + threads - 1) / threads), threads>>>(
      x0.data_ptr<float>(), out.data_ptr<float>(), x0.numel());
  return out;
}
