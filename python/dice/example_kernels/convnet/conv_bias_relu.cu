#include <torch/extension.h>

// relu(conv2d(x, w, padding=1) + bias), one thread per output element; the
// bias is one value per output channel.
__global__ void conv_bias_relu_kernel(const float *x, const float *w, const float *bias,
                                      float *y, int N, int C, int H, int W, int K,
                                      int R) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= N * K * H * W)
    return;
  int ow = i % W, oh = (i / W) % H, k = (i / (W * H)) % K, n = i / (W * H * K);
  float acc = 0.f;
  for (int c = 0; c < C; ++c)
    for (int r = 0; r < R; ++r)
      for (int s = 0; s < R; ++s) {
        int ih = oh + r - R / 2, iw = ow + s - R / 2;
        if (ih >= 0 && ih < H && iw >= 0 && iw < W)
          acc += x[((n * C + c) * H + ih) * W + iw] * w[((k * C + c) * R + r) * R + s];
      }
  float v = acc + bias[k];
  y[i] = v > 0.f ? v : 0.f;
}

torch::Tensor dice_forward(torch::Tensor x0, torch::Tensor x1, torch::Tensor x2) {
  auto x = x0.contiguous(), w = x1.contiguous(), b = x2.contiguous();
  int N = (int)x.size(0), C = (int)x.size(1), H = (int)x.size(2), W = (int)x.size(3);
  int K = (int)w.size(0), R = (int)w.size(2);
  auto y = torch::empty({N, K, H, W}, x.options());
  int total = N * K * H * W;
  conv_bias_relu_kernel<<<(total + 255) / 256, 256>>>(
      x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(),
      N, C, H, W, K, R);
  return y;
}
