"""Dense tasks: a shared-memory tiled matmul, GEMMs with a bias +
activation epilogue (weights [K, N] or nn.Linear's [N, K]), and a 2-D
transpose through a padded shared tile.

Each output tile is TILE x TILE threads; the K loop stages one tile of
each operand in shared memory (zero-filled past the edges, so any M, N, K
work), then accumulates in a register in float."""

from dice.corpus.cuda_common import (DTYPES, definition_head, header, input_checks,
                                     launch_args, parameters, pointer)


def gemm_source(signature, dtype, tile, weight_layout, bias, activation, comment):
    """out[M, N] = act(x[M, K] @ W + bias). weight_layout "kn": W is the
    second input as [K, N]; "nk": it is [N, K] (nn.Linear), used transposed.
    `activation` is a C statement on float v, or None."""
    s = DTYPES[dtype]
    t = s.c_type
    names = parameters(signature)
    x, w = names[0], names[1]
    b = names[2] if bias else None
    if weight_layout == "kn":
        # Thread (ty, tx) loads W[k0 + ty][col]: consecutive tx, consecutive addresses.
        load_w = (f"ws[ty][tx] = (k0 + ty < K && col < N) ? "
                  f"{s.load.format('w[(int64_t)(k0 + ty) * N + col]')} : 0.f;")
    else:
        # W is [N, K]: thread (ty, tx) loads W[n0 + ty][k0 + tx] (coalesced
        # along K) and stores it transposed, ws[k][n].
        load_w = (f"ws[tx][ty] = (n0 + ty < N && k0 + tx < K) ? "
                  f"{s.load.format('w[(int64_t)(n0 + ty) * K + k0 + tx]')} : 0.f;")
    epilogue = []
    if bias:
        epilogue.append(f"v += {s.load.format('bias[col]')};")
    if activation:
        epilogue.append(activation)
    bias_param = f", const {t} *__restrict__ bias" if bias else ""
    kernel = f"""
constexpr int TILE = {tile};

__global__ void gemm_tiled_kernel(const {t} *__restrict__ x, const {t} *__restrict__ w{bias_param},
                                  {t} *__restrict__ out, int M, int N, int K) {{
  __shared__ float xs[TILE][TILE];
  __shared__ float ws[TILE][TILE + 1];  // +1: no bank conflicts on the transposed store
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int n0 = blockIdx.x * TILE, row = blockIdx.y * TILE + ty, col = n0 + tx;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += TILE) {{
    xs[ty][tx] = (row < M && k0 + tx < K) ? {s.load.format('x[(int64_t)row * K + k0 + tx]')} : 0.f;
    {load_w}
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k)
      acc += xs[ty][k] * ws[k][tx];
    __syncthreads();
  }}
  if (row < M && col < N) {{
    float v = acc;
{chr(10).join("    " + line for line in epilogue)}
    out[(int64_t)row * N + col] = {s.store.format('v')};
  }}
}}
"""
    n_expr = f"{w}.size(1)" if weight_layout == "kn" else f"{w}.size(0)"
    k_check = f"{w}.size(0)" if weight_layout == "kn" else f"{w}.size(1)"
    ptrs = [pointer(n, dtype) for n in names]
    host = [input_checks(names, [dtype] * len(names)),
            f'  TORCH_CHECK({x}.dim() == 2 && {w}.dim() == 2, "expects 2-D operands");',
            f"  const int M = (int){x}.size(0), K = (int){x}.size(1), N = (int){n_expr};",
            f'  TORCH_CHECK({k_check} == K, "inner dimensions differ");']
    if bias:
        host.append(f'  TORCH_CHECK({b}.numel() == N, "bias must hold N values");')
    host += [f"  auto out = torch::empty({{M, N}}, {x}.options());",
             "  if (M == 0 || N == 0)\n    return out;",
             "  const dim3 threads(TILE, TILE);",
             "  const dim3 blocks((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);",
             "  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();",
             "  gemm_tiled_kernel<<<blocks, threads, 0, stream>>>("
             f"{launch_args(ptrs + [pointer('out', dtype, const=False), 'M', 'N', 'K'])});",
             "  C10_CUDA_KERNEL_LAUNCH_CHECK();", "  return out;"]
    return (f"{header(dtype)}\n// {comment}\n{kernel}\n{definition_head(signature)} {{\n"
            + "\n".join(host) + "\n}\n")


def transpose_source(signature, dtype):
    """out[N, M] = x[M, N]^T through a 32 x 33 shared tile: reads and
    writes both coalesced, 32 x 8 threads each moving four elements."""
    t = DTYPES[dtype].c_type
    x = parameters(signature)[0]
    kernel = f"""
constexpr int TILE = 32;
constexpr int ROWS = 8;

__global__ void transpose_kernel(const {t} *__restrict__ in, {t} *__restrict__ out, int M, int N) {{
  __shared__ {t} tile[TILE][TILE + 1];  // +1: the column reads hit distinct banks
  const int c = blockIdx.x * TILE + threadIdx.x;
  for (int r = blockIdx.y * TILE + threadIdx.y, j = threadIdx.y; j < TILE; r += ROWS, j += ROWS)
    if (r < M && c < N)
      tile[j][threadIdx.x] = in[(int64_t)r * N + c];
  __syncthreads();
  const int oc = blockIdx.y * TILE + threadIdx.x;  // a column of in, a row of out's
  for (int orow = blockIdx.x * TILE + threadIdx.y, j = threadIdx.y; j < TILE;
       orow += ROWS, j += ROWS)
    if (orow < N && oc < M)
      out[(int64_t)orow * M + oc] = tile[threadIdx.x][j];
}}
"""
    host = [input_checks([x], [dtype]),
            f'  TORCH_CHECK({x}.dim() == 2, "expects a 2-D tensor");',
            f"  const int M = (int){x}.size(0), N = (int){x}.size(1);",
            f"  auto out = torch::empty({{N, M}}, {x}.options());",
            "  if (M == 0 || N == 0)\n    return out;",
            "  const dim3 threads(TILE, ROWS);",
            "  const dim3 blocks((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);",
            "  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();",
            "  transpose_kernel<<<blocks, threads, 0, stream>>>("
            f"{launch_args([pointer(x, dtype), pointer('out', dtype, const=False), 'M', 'N'])});",
            "  C10_CUDA_KERNEL_LAUNCH_CHECK();", "  return out;"]
    return (f"{header(dtype)}\n// 2-D transpose, [M, N] -> [N, M].\n{kernel}\n"
            f"{definition_head(signature)} {{\n" + "\n".join(host) + "\n}\n")
