#include <torch/extension.h>

// 2-D transpose through a padded shared tile (no bank conflicts).
constexpr int kDim = 32;
constexpr int kRows = 8;

__global__ void transpose_kernel(const float *in, float *out, int rows, int cols) {
  __shared__ float tile[kDim][kDim + 1];
  int x = blockIdx.x * kDim + threadIdx.x;
  int y = blockIdx.y * kDim + threadIdx.y;
  for (int j = 0; j < kDim; j += kRows)
    if (x < cols && y + j < rows)
      tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
  __syncthreads();
  x = blockIdx.y * kDim + threadIdx.x;
  y = blockIdx.x * kDim + threadIdx.y;
  for (int j = 0; j < kDim; j += kRows)
    if (x < rows && y + j < cols)
      out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

torch::Tensor dice_forward(torch::Tensor x0) {
  auto x = x0.contiguous();
  int rows = (int)x.size(0), cols = (int)x.size(1);
  auto out = torch::empty({cols, rows}, x.options());
  dim3 grid((cols + kDim - 1) / kDim, (rows + kDim - 1) / kDim);
  transpose_kernel<<<grid, dim3(kDim, kRows)>>>(x.data_ptr<float>(),
                                                out.data_ptr<float>(), rows, cols);
  return out;
}
