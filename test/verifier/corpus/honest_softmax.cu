#include <torch/extension.h>
#include <cfloat>

// Row softmax: one warp per row, max and sum by shuffles.
__device__ float warpMax(float v) {
  for (int o = 16; o > 0; o /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ float warpSum(float v) {
  for (int o = 16; o > 0; o /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__global__ void softmax_kernel(const float *in, float *out, int rows, int cols) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows)
    return;
  const float *x = in + (int64_t)row * cols;
  float *y = out + (int64_t)row * cols;
  float m = -FLT_MAX;
  for (int c = lane; c < cols; c += 32)
    m = fmaxf(m, x[c]);
  m = warpMax(m);
  float s = 0.f;
  for (int c = lane; c < cols; c += 32)
    s += __expf(x[c] - m);
  s = warpSum(s);
  for (int c = lane; c < cols; c += 32)
    y[c] = __expf(x[c] - m) / s;
}

torch::Tensor dice_forward(torch::Tensor x0) {
  auto x = x0.contiguous();
  int cols = (int)x.size(-1);
  int rows = (int)(x.numel() / cols);
  auto out = torch::empty_like(x);
  int warpsPerBlock = 8;
  int blocks = (rows + warpsPerBlock - 1) / warpsPerBlock;
  softmax_kernel<<<blocks, warpsPerBlock * 32>>>(x.data_ptr<float>(),
                                                out.data_ptr<float>(), rows, cols);
  return out;
}
