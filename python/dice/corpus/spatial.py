"""Spatial tasks over NCHW images: max and average pooling with a square
window whose stride is its size (no padding, floor mode, as
`F.max_pool2d(x, k)` and `F.avg_pool2d(x, k)`).

One thread per output element in a grid-stride loop; the window is a
compile-time constant, so its loops unroll; consecutive threads take
consecutive output columns, so a warp reads neighbouring windows of the
same input rows."""

from dice.corpus.cuda_common import (DTYPES, blocks_for, definition_head, header,
                                     input_checks, launch_args, parameters, pointer)


def pool2d_source(op, signature, dtype, window):
    """op "max" or "avg": [N, C, H, W] -> [N, C, H / k, W / k]."""
    s = DTYPES[dtype]
    t = s.c_type
    x = parameters(signature)[0]
    if op == "max":
        init = "-INFINITY"
        # NaN propagates, as in PyTorch's max pooling.
        update = "acc = (v > acc || isnan(v)) ? v : acc;"
        final = "acc"
        word = "Max"
    else:
        init = "0.f"
        update = "acc += v;"
        final = f"acc * (1.f / {window * window}.f)"
        word = "Average"
    kernel = f"""
constexpr int K = {window};

__global__ void {op}_pool2d_kernel(const {t} *__restrict__ in, {t} *__restrict__ out,
                                 int64_t total, int H, int W, int OH, int OW) {{
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += stride) {{
    const int ow = (int)(i % OW);
    const int64_t rest = i / OW;
    const int oh = (int)(rest % OH);
    const int64_t plane = rest / OH;  // n * C + c
    const {t} *window = in + (plane * H + (int64_t)oh * K) * W + (int64_t)ow * K;
    float acc = {init};
#pragma unroll
    for (int r = 0; r < K; ++r)
#pragma unroll
      for (int c = 0; c < K; ++c) {{
        const float v = {s.load.format("window[r * W + c]")};
        {update}
      }}
    out[i] = {s.store.format(final)};
  }}
}}
"""
    host = [input_checks([x], [dtype]),
            f'  TORCH_CHECK({x}.dim() == 4, "expects an [N, C, H, W] tensor");',
            f"  const int H = (int){x}.size(2), W = (int){x}.size(3);",
            "  const int OH = H / K, OW = W / K;",
            f"  auto out = torch::empty({{{x}.size(0), {x}.size(1), OH, OW}}, {x}.options());",
            "  const int64_t total = out.numel();",
            "  if (total == 0)\n    return out;",
            "  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();",
            "  constexpr int threads = 256;",
            f"  {op}_pool2d_kernel<<<{blocks_for('total')}, threads, 0, stream>>>("
            f"{launch_args([pointer(x, dtype), pointer('out', dtype, const=False), 'total', 'H', 'W', 'OH', 'OW'])});",
            "  C10_CUDA_KERNEL_LAUNCH_CHECK();", "  return out;"]
    return (f"{header(dtype)}\n// {word} pooling, {window} x {window} windows, stride "
            f"{window}: [N, C, H, W] -> [N, C, H / {window}, W / {window}].\n{kernel}\n"
            f"{definition_head(signature)} {{\n" + "\n".join(host) + "\n}\n")
