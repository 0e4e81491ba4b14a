#include <torch/extension.h>

// x / sum(x, dim=1), one block per row.
__global__ void row_normalize_kernel(const float *x, float *y, int cols) {
  __shared__ float total[128];
  const float *row = x + (int64_t)blockIdx.x * cols;
  float s = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    s += row[c];
  total[threadIdx.x] = s;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k /= 2) {
    if (threadIdx.x < k)
      total[threadIdx.x] += total[threadIdx.x + k];
    __syncthreads();
  }
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    y[(int64_t)blockIdx.x * cols + c] = row[c] / total[0];
}

torch::Tensor dice_forward(torch::Tensor x0) {
  auto x = x0.contiguous();
  int cols = (int)x.size(1), rows = (int)x.size(0);
  auto y = torch::empty_like(x);
  row_normalize_kernel<<<rows, 128>>>(x.data_ptr<float>(), y.data_ptr<float>(), cols);
  return y;
}
