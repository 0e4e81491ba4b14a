#include <torch/extension.h>
#include <cublas_v2.h>

__global__ void bias_kernel(float *y, const float *b, int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows * cols)
    y[i] += b[i % cols];
}

torch::Tensor dice_forward(torch::Tensor x0, torch::Tensor x1, torch::Tensor x2) {
  int M = (int)x0.size(0), K = (int)x0.size(1), N = (int)x1.size(1);
  auto y = torch::empty({M, N}, x0.options());
  cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle(); // expect: vendor_library
  float alpha = 1.f, beta = 0.f;
  // Row-major C = A B as column-major C^T = B^T A^T.
  cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, // expect: vendor_library
              x1.data_ptr<float>(), N, x0.data_ptr<float>(), K, &beta,
              y.data_ptr<float>(), N);
  bias_kernel<<<(M * N + 255) / 256, 256>>>(y.data_ptr<float>(),
                                           x2.data_ptr<float>(), M, N);
  return y;
}
