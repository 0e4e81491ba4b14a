#include <torch/extension.h>
#include <cuda_fp16.h>

// tanh-approximated GELU on fp16 storage, computed in fp32.
__device__ __forceinline__ float gelu(float x) {
  const float k = 0.7978845608f; // sqrt(2 / pi)
  return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

__global__ void gelu_half_kernel(const __half *in, __half *out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = __float2half(gelu(__half2float(in[i])));
}

torch::Tensor dice_forward(torch::Tensor x0) {
  TORCH_CHECK(x0.scalar_type() == at::kHalf, "expects float16");
  auto x = x0.contiguous();
  auto out = torch::empty_like(x);
  int64_t n = x.numel();
  gelu_half_kernel<<<(unsigned)((n + 255) / 256), 256>>>(
      reinterpret_cast<const __half *>(x.data_ptr<at::Half>()),
      reinterpret_cast<__half *>(out.data_ptr<at::Half>()), n);
  return out;
}
