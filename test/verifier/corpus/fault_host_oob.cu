#include <torch/extension.h>
#include <vector>

__global__ void copy_rows_kernel(const float *in, float *out, const int64_t *offsets,
                                 int64_t rows, int64_t cols) {
  int64_t r = blockIdx.x;
  for (int64_t c = threadIdx.x; r < rows && c < cols; c += blockDim.x)
    out[offsets[r] + c] = in[offsets[r] + c];
}

// Fills a host table of row offsets with a stride bug: entry r is written at
// r * numel^2 instead of r, 2^47 bytes past the table for r = 1 (beyond any
// user address): a segmentation fault on the host.
torch::Tensor dice_forward(torch::Tensor x0) {
  int64_t rows = x0.size(0), cols = x0.numel() / rows;
  int64_t stride = x0.numel() * x0.numel();
  std::vector<int64_t> offsets(rows + 1);
  for (int64_t r = 0; r <= rows; ++r)
    offsets[r * stride] = r * cols;
  auto table = torch::empty({rows + 1}, x0.options().dtype(torch::kLong));
  cudaMemcpy(table.data_ptr<int64_t>(), offsets.data(), offsets.size() * sizeof(int64_t),
             cudaMemcpyHostToDevice);
  auto out = torch::empty_like(x0);
  copy_rows_kernel<<<(unsigned)rows, 256>>>(x0.data_ptr<float>(), out.data_ptr<float>(),
                                            table.data_ptr<int64_t>(), rows, cols);
  return out;
}
