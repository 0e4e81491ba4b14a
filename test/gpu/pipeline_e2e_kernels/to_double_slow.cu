#include <torch/extension.h>

// Slow: correct, but one thread converts every element.
__global__ void to_double_kernel(const float *x, double *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = (double)x[i];
}

torch::Tensor dice_forward(torch::Tensor x0) {
  auto x = x0.contiguous();
  auto y = torch::empty(x.sizes(), x.options().dtype(torch::kFloat64));
  to_double_kernel<<<1, 1>>>(x.data_ptr<float>(), y.data_ptr<double>(), x.numel());
  return y;
}
