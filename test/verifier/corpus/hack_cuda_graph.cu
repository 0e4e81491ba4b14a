#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void inc_kernel(const float *in, float *out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = in[i] + 1.f;
}

// Captures the launch once and replays the graph.
torch::Tensor dice_forward(torch::Tensor x0) {
  auto out = torch::empty_like(x0);
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal); // expect: stream_or_graph
  inc_kernel<<<(unsigned)((x0.numel() + 255) / 256), 256, 0, stream>>>(
      x0.data_ptr<float>(), out.data_ptr<float>(), x0.numel());
  cudaStreamEndCapture(stream, &graph); // expect: stream_or_graph
  cudaGraphInstantiate(&exec, graph, 0); // expect: stream_or_graph
  cudaGraphLaunch(exec, stream); // expect: stream_or_graph
  return out;
}
