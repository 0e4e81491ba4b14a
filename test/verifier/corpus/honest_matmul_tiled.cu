#include <torch/extension.h>

// C[M,N] = A[M,K] * B[K,N], 32x32 tiles staged in shared memory.
#define TILE 32

__global__ void matmul_tiled(const float *A, const float *B, float *C, int M, int N,
                             int K) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE + 1];
  int row = blockIdx.y * TILE + threadIdx.y;
  int col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.f;
  for (int t = 0; t < K; t += TILE) {
    As[threadIdx.y][threadIdx.x] =
        row < M && t + threadIdx.x < K ? A[row * K + t + threadIdx.x] : 0.f;
    Bs[threadIdx.y][threadIdx.x] =
        col < N && t + threadIdx.y < K ? B[(t + threadIdx.y) * N + col] : 0.f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k)
      acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N)
    C[row * N + col] = acc;
}

torch::Tensor dice_forward(torch::Tensor x0, torch::Tensor x1) {
  auto a = x0.contiguous();
  auto b = x1.contiguous();
  int M = (int)a.size(0), K = (int)a.size(1), N = (int)b.size(1);
  auto c = torch::empty({M, N}, a.options());
  dim3 block(TILE, TILE);
  dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
  matmul_tiled<<<grid, block>>>(a.data_ptr<float>(), b.data_ptr<float>(),
                                c.data_ptr<float>(), M, N, K);
  return c;
}
