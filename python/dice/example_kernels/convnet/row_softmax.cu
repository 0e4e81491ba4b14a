#include <torch/extension.h>

// softmax(x, dim=1): the row's max, then the sum of exp(x - max), then each
// exp(x - max) over the sum; one block per row, both reductions in shared
// memory.
__global__ void row_softmax_kernel(const float *x, float *y, int cols) {
  __shared__ float partial[128];
  const float *row = x + (int64_t)blockIdx.x * cols;
  float *out = y + (int64_t)blockIdx.x * cols;

  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    m = fmaxf(m, row[c]);
  partial[threadIdx.x] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s)
      partial[threadIdx.x] = fmaxf(partial[threadIdx.x], partial[threadIdx.x + s]);
    __syncthreads();
  }
  const float best = partial[0];
  __syncthreads();

  float total = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    total += expf(row[c] - best);
  partial[threadIdx.x] = total;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s)
      partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  const float sum = partial[0];

  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    out[c] = expf(row[c] - best) / sum;
}

torch::Tensor dice_forward(torch::Tensor x0) {
  auto x = x0.contiguous();
  int cols = (int)x.size(1), rows = (int)x.size(0);
  auto y = torch::empty_like(x);
  row_softmax_kernel<<<rows, 128>>>(x.data_ptr<float>(), y.data_ptr<float>(), cols);
  return y;
}
