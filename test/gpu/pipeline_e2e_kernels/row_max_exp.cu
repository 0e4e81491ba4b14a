#include <torch/extension.h>

// exp(x - max(x, dim=1)), one block per row.
__global__ void row_max_exp_kernel(const float *x, float *y, int cols) {
  __shared__ float best[128];
  const float *row = x + (int64_t)blockIdx.x * cols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    m = fmaxf(m, row[c]);
  best[threadIdx.x] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s)
      best[threadIdx.x] = fmaxf(best[threadIdx.x], best[threadIdx.x + s]);
    __syncthreads();
  }
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    y[(int64_t)blockIdx.x * cols + c] = expf(row[c] - best[0]);
}

torch::Tensor dice_forward(torch::Tensor x0) {
  auto x = x0.contiguous();
  int cols = (int)x.size(1), rows = (int)x.size(0);
  auto y = torch::empty_like(x);
  row_max_exp_kernel<<<rows, 128>>>(x.data_ptr<float>(), y.data_ptr<float>(), cols);
  return y;
}
