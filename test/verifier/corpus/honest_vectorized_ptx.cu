#include <torch/extension.h>

// out = x * alpha with float4 loads; the multiply is inline PTX arithmetic,
// which is allowed (it neither branches nor traps).
__device__ __forceinline__ float mulPtx(float a, float b) {
  float r;
  asm("mul.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

__global__ void scale_vec4_kernel(const float4 *in, float4 *out, float alpha,
                                  int64_t n4) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n4) {
    float4 v = __ldg(in + i);
    v.x = mulPtx(v.x, alpha);
    v.y = mulPtx(v.y, alpha);
    v.z = mulPtx(v.z, alpha);
    v.w = mulPtx(v.w, alpha);
    out[i] = v;
  }
}

__global__ void scale_tail_kernel(const float *in, float *out, float alpha,
                                  int64_t start, int64_t n) {
  int64_t i = start + threadIdx.x;
  if (i < n)
    out[i] = in[i] * alpha;
}

torch::Tensor dice_forward(torch::Tensor x0) {
  auto x = x0.contiguous();
  auto out = torch::empty_like(x);
  int64_t n = x.numel(), n4 = n / 4;
  const float alpha = 0.5f;
  if (n4 > 0)
    scale_vec4_kernel<<<(unsigned)((n4 + 255) / 256), 256>>>(
        reinterpret_cast<const float4 *>(x.data_ptr<float>()),
        reinterpret_cast<float4 *>(out.data_ptr<float>()), alpha, n4);
  if (n % 4)
    scale_tail_kernel<<<1, 4>>>(x.data_ptr<float>(), out.data_ptr<float>(), alpha,
                                n4 * 4, n);
  return out;
}
