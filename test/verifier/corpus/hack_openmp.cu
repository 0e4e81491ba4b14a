#include <torch/extension.h>
#include <vector>

__global__ void abs_kernel(const float *in, float *out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = fabsf(in[i]);
}

// Host-side parallel loop over chunks, each launching its own slice.
torch::Tensor dice_forward(torch::Tensor x0) {
  auto out = torch::empty_like(x0);
  int64_t n = x0.numel();
  const float *in = x0.data_ptr<float>();
  float *o = out.data_ptr<float>();
#pragma omp parallel for // expect: threads
  for (int chunk = 0; chunk < 4; ++chunk) {
    int64_t begin = n * chunk / 4, end = n * (chunk + 1) / 4;
    abs_kernel<<<(unsigned)((end - begin + 255) / 256), 256>>>(in + begin, o + begin,
                                                             end - begin);
  }
  return out;
}
