#include <torch/extension.h>

// relu for every floating dtype, half included, through AT_DISPATCH.
template <typename scalar_t>
__global__ void relu_kernel(const scalar_t *__restrict__ in, scalar_t *__restrict__ out,
                            int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    scalar_t v = in[i];
    out[i] = v > scalar_t(0) ? v : scalar_t(0);
  }
}

torch::Tensor dice_forward(torch::Tensor x0) {
  auto x = x0.contiguous();
  auto out = torch::empty_like(x);
  int64_t n = x.numel();
  int blocks = (int)std::min<int64_t>((n + 255) / 256, 4096);
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.scalar_type(), "relu_kernel", [&] {
    relu_kernel<scalar_t><<<blocks, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), n);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}
