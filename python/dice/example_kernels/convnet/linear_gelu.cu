#include <torch/extension.h>

// gelu(flatten(x) @ w + b) with the exact (erf) GELU, one thread per output
// element; x is [M, ...], read as [M, K] (the flatten is a view).
__global__ void linear_gelu_kernel(const float *x, const float *w, const float *b, float *y,
                                   int M, int K, int N) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= M * N)
    return;
  int row = i / N, col = i % N;
  float acc = b[col];
  for (int k = 0; k < K; ++k)
    acc += x[row * K + k] * w[k * N + col];
  y[i] = acc * 0.5f * (1.f + erff(acc * 0.70710678118654752f));
}

torch::Tensor dice_forward(torch::Tensor x0, torch::Tensor x1, torch::Tensor x2) {
  auto x = x0.contiguous(), w = x1.contiguous(), b = x2.contiguous();
  int M = (int)x.size(0), K = (int)(x.numel() / M), N = (int)w.size(1);
  auto y = torch::empty({M, N}, x.options());
  linear_gelu_kernel<<<(M * N + 127) / 128, 128>>>(x.data_ptr<float>(), w.data_ptr<float>(),
                                                   b.data_ptr<float>(), y.data_ptr<float>(),
                                                   M, K, N);
  return y;
}
