#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void square_kernel(const float *in, float *out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = in[i] * in[i];
}

// The work goes to a private stream, outside the events the verifier times.
torch::Tensor dice_forward(torch::Tensor x0) {
  auto out = torch::empty_like(x0);
  cudaStream_t side;
  cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking); // expect: stream_or_graph
  auto pooled = at::cuda::getStreamFromPool(); // expect: stream_or_graph
  square_kernel<<<(unsigned)((x0.numel() + 255) / 256), 256, 0, side>>>(
      x0.data_ptr<float>(), out.data_ptr<float>(), x0.numel());
  (void)pooled;
  return out;
}
