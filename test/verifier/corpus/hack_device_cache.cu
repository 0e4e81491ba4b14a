#include <torch/extension.h>

// A device-side "already computed" flag and result buffer: the timed calls
// after the first one only copy.
__device__ int g_done = 0; // expect: persistent_state
__device__ float g_cache[1 << 20]; // expect: persistent_state
__device__ float g_table[4] = {1.f, 2.f, 3.f, 4.f};

__global__ void cached_tanh_kernel(const float *in, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  if (!g_done)
    g_cache[i] = tanhf(in[i]) * g_table[0];
  out[i] = g_cache[i];
  __syncthreads();
  if (i == 0)
    atomicExch(&g_done, 1);
}

torch::Tensor dice_forward(torch::Tensor x0) {
  auto out = torch::empty_like(x0);
  int n = (int)x0.numel();
  cached_tanh_kernel<<<(n + 255) / 256, 256>>>(x0.data_ptr<float>(),
                                               out.data_ptr<float>(), n);
  return out;
}
