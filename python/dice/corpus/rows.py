"""Row tasks over the last dimension: reductions (sum, mean, max, min,
prod, L2 norm, logsumexp), softmax, log-softmax, layer norm
and RMS norm.

One block per row: each thread folds a strided slice of the row (float4
loads for fp32 rows whose length is a multiple of 4 and whose data is
16-byte aligned), then warp shuffles and one shared-memory step combine
the warps; every thread receives the result, so normalisations can make
their next pass over the row."""

from dataclasses import dataclass

from dice.corpus.cuda_common import (DTYPES, definition_head, float_literal, header,
                                     input_checks, launch_args, parameters, pointer)


@dataclass(frozen=True)
class Fold:
    identity: str     # C float
    combine: str      # C expression of a and b


FOLDS = {
    "sum": Fold("0.f", "a + b"),
    "max": Fold("-INFINITY", "fmaxf(a, b)"),
    "min": Fold("INFINITY", "fminf(a, b)"),
    "prod": Fold("1.f", "a * b"),
}


def block_fold(name):
    """warp_<name> and block_<name>: the fold of every thread's value."""
    f = FOLDS[name]
    return f"""
__device__ __forceinline__ float warp_{name}(float a) {{
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {{
    const float b = __shfl_xor_sync(0xffffffffu, a, offset);
    a = {f.combine};
  }}
  return a;
}}

// Every thread gets the block's {name}; safe to call repeatedly in a kernel.
__device__ float block_{name}(float a) {{
  __shared__ float partial[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  a = warp_{name}(a);
  __syncthreads();  // the previous call's readers are done with partial
  if (lane == 0)
    partial[warp] = a;
  __syncthreads();
  a = lane < (int)((blockDim.x + 31) >> 5) ? partial[lane] : {f.identity};
  return warp_{name}(a);
}}
"""


def row_loop(dtype, update, indent="  "):
    """Folds every element of `row` into the thread's state: `update` is a
    C statement on float x. float4 loads when `vec4` says they fit."""
    s = DTYPES[dtype]
    scalar = (f"{indent}for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {{\n"
              f"{indent}  const float x = {s.load.format('row[c]')};\n"
              f"{indent}  {update}\n{indent}}}")
    if dtype != "float32":
        return scalar
    return (f"{indent}if (vec4) {{\n"
            f"{indent}  const float4 *row4 = reinterpret_cast<const float4 *>(row);\n"
            f"{indent}  for (int64_t c = threadIdx.x; c < cols / 4; c += blockDim.x) {{\n"
            f"{indent}    const float4 q = row4[c];\n"
            f"{indent}    const float e[4] = {{q.x, q.y, q.z, q.w}};\n"
            f"{indent}#pragma unroll\n"
            f"{indent}    for (int k = 0; k < 4; ++k) {{\n"
            f"{indent}      const float x = e[k];\n"
            f"{indent}      {update}\n"
            f"{indent}    }}\n{indent}  }}\n{indent}}} else {{\n"
            + "\n".join("  " + line for line in scalar.splitlines()) + f"\n{indent}}}")


def threads_for(cols):
    return 256 if cols >= 1024 else 128 if cols >= 128 else 32


# name -> (fold, per-element update of `acc`, final C expression of acc,
#          comment). `inv_cols` is 1 / cols.
REDUCTIONS = {
    "sum": ("sum", "acc += x;", "acc", "sum"),
    "mean": ("sum", "acc += x;", "acc * inv_cols", "mean"),
    "amax": ("max", "acc = fmaxf(acc, x);", "acc", "maximum"),
    "max": ("max", "acc = fmaxf(acc, x);", "acc", "maximum"),
    "amin": ("min", "acc = fminf(acc, x);", "acc", "minimum"),
    "min": ("min", "acc = fminf(acc, x);", "acc", "minimum"),
    "prod": ("prod", "acc *= x;", "acc", "product"),
    "l2_norm": ("sum", "acc += x * x;", "sqrtf(acc)", "L2 norm"),
    "sum_squares": ("sum", "acc += x * x;", "acc", "sum of squares"),
}


def launch_rows(name, signature, dtype, out_alloc, kernel_args, vectorised=True):
    """dice_forward of a one-block-per-row kernel; `vectorised`: the
    kernel takes the vec4 flag (fp32 only)."""
    names = parameters(signature)
    x = names[0]
    lines = [input_checks(names, [dtype] * len(names)),
             f"  const int64_t cols = {x}.size(-1);",
             f"  const int64_t rows = cols == 0 ? 0 : {x}.numel() / cols;",
             out_alloc,
             "  if (rows == 0)\n    return out;"]
    if dtype == "float32" and vectorised:
        lines.append("  const bool vec4 = cols % 4 == 0 && "
                     f"reinterpret_cast<uintptr_t>({x}.data_ptr<float>()) % 16 == 0;")
    lines += ["  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();",
              f"  {name}_kernel<<<(unsigned)rows, kThreads, 0, stream>>>("
              f"{launch_args(kernel_args.split(', '))});",
              "  C10_CUDA_KERNEL_LAUNCH_CHECK();", "  return out;"]
    return f"{definition_head(signature)} {{\n" + "\n".join(lines) + "\n}\n"


def vec_param(dtype):
    return ", bool vec4" if dtype == "float32" else ""


def vec_arg(dtype):
    return ", vec4" if dtype == "float32" else ""


def reduced_alloc(x, options):
    """Host lines: `out`, shaped like x without its last dimension."""
    return (f"  auto shape = {x}.sizes().vec();\n  shape.pop_back();\n"
            f"  auto out = torch::empty(shape, {options});")


def reduction_source(op, signature, dtype, cols):
    """x.<op>(dim=-1): [..., N] -> [...]."""
    fold, update, final, word = REDUCTIONS[op]
    s = DTYPES[dtype]
    t = s.c_type
    x = parameters(signature)[0]
    kernel = f"""
constexpr int kThreads = {threads_for(cols)};
{block_fold(fold)}
__global__ void row_{op}_kernel(const {t} *__restrict__ in, {t} *__restrict__ out, int64_t cols,
                              float inv_cols{vec_param(dtype)}) {{
  const {t} *row = in + (int64_t)blockIdx.x * cols;
  float acc = {FOLDS[fold].identity};
{row_loop(dtype, update)}
  acc = block_{fold}(acc);
  if (threadIdx.x == 0)
    out[blockIdx.x] = {s.store.format(final)};
}}
"""
    alloc = reduced_alloc(x, f"{x}.options()")
    args = (f"{pointer(x, dtype)}, {pointer('out', dtype, const=False)}, cols, "
            f"1.f / (float)cols{vec_arg(dtype)}")
    return (f"{header(dtype)}\n// The {word} of each row (last dimension), one block per row.\n"
            f"{kernel}\n" + launch_rows(f"row_{op}", signature, dtype, alloc, args))


def logsumexp_source(signature, dtype, cols):
    s = DTYPES[dtype]
    t = s.c_type
    x = parameters(signature)[0]
    kernel = f"""
constexpr int kThreads = {threads_for(cols)};
{block_fold("max")}{block_fold("sum")}
// log(sum(exp(x))) = m + log(sum(exp(x - m))) with m the row's maximum.
__global__ void row_logsumexp_kernel(const {t} *__restrict__ in, {t} *__restrict__ out,
                                     int64_t cols{vec_param(dtype)}) {{
  const {t} *row = in + (int64_t)blockIdx.x * cols;
  float m = -INFINITY;
{row_loop(dtype, "m = fmaxf(m, x);")}
  m = block_max(m);
  float acc = 0.f;
{row_loop(dtype, "acc += expf(x - m);")}
  acc = block_sum(acc);
  if (threadIdx.x == 0)
    out[blockIdx.x] = {s.store.format("m + logf(acc)")};
}}
"""
    alloc = reduced_alloc(x, f"{x}.options()")
    args = f"{pointer(x, dtype)}, {pointer('out', dtype, const=False)}, cols{vec_arg(dtype)}"
    return (f"{header(dtype)}\n// logsumexp of each row (last dimension), one block per row.\n"
            f"{kernel}\n" + launch_rows("row_logsumexp", signature, dtype, alloc, args))


def variance_source(op, signature, dtype, cols):
    """torch.var / torch.std over the last dimension, unbiased (n - 1):
    the mean first, then the squared deviations from it."""
    s = DTYPES[dtype]
    t = s.c_type
    x = parameters(signature)[0]
    final = "sqrtf(sq / (float)(cols - 1))" if op == "std" else "sq / (float)(cols - 1)"
    kernel = f"""
constexpr int kThreads = {threads_for(cols)};
{block_fold("sum")}
__global__ void row_{op}_kernel(const {t} *__restrict__ in, {t} *__restrict__ out,
                              int64_t cols{vec_param(dtype)}) {{
  const {t} *row = in + (int64_t)blockIdx.x * cols;
  float acc = 0.f;
{row_loop(dtype, "acc += x;")}
  const float mean = block_sum(acc) / (float)cols;
  float sq = 0.f;
{row_loop(dtype, "sq += (x - mean) * (x - mean);")}
  sq = block_sum(sq);
  if (threadIdx.x == 0)
    out[blockIdx.x] = {s.store.format(final)};
}}
"""
    alloc = reduced_alloc(x, f"{x}.options()")
    args = f"{pointer(x, dtype)}, {pointer('out', dtype, const=False)}, cols{vec_arg(dtype)}"
    word = "standard deviation" if op == "std" else "variance"
    return (f"{header(dtype)}\n// The unbiased {word} of each row (last dimension), one block "
            f"per row.\n{kernel}\n" + launch_rows(f"row_{op}", signature, dtype, alloc, args))


def softmax_source(op, signature, dtype, cols):
    """softmax / log_softmax over the last dimension: three passes (max,
    sum of exponentials, write), the row staying in L1/L2 between them."""
    s = DTYPES[dtype]
    t = s.c_type
    x = parameters(signature)[0]
    write = "(x - m) - logf(total)" if op == "log_softmax" else "expf(x - m) * inv_total"
    kernel = f"""
constexpr int kThreads = {threads_for(cols)};
{block_fold("max")}{block_fold("sum")}
__global__ void row_{op}_kernel(const {t} *__restrict__ in, {t} *__restrict__ out,
                              int64_t cols{vec_param(dtype)}) {{
  const {t} *row = in + (int64_t)blockIdx.x * cols;
  {t} *dst = out + (int64_t)blockIdx.x * cols;
  float m = -INFINITY;
{row_loop(dtype, "m = fmaxf(m, x);")}
  m = block_max(m);
  float total = 0.f;
{row_loop(dtype, "total += expf(x - m);")}
  total = block_sum(total);
  const float inv_total = 1.f / total;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {{
    const float x = {s.load.format("row[c]")};
    dst[c] = {s.store.format(write)};
  }}
}}
"""
    alloc = f"  auto out = torch::empty_like({x});"
    args = f"{pointer(x, dtype)}, {pointer('out', dtype, const=False)}, cols{vec_arg(dtype)}"
    word = "log-softmax" if op == "log_softmax" else "softmax"
    return (f"{header(dtype)}\n// {word} of each row (last dimension), one block per row.\n"
            f"{kernel}\n" + launch_rows(f"row_{op}", signature, dtype, alloc, args))


def norm_source(op, signature, dtype, cols, eps):
    """layer_norm (weight and bias) / rms_norm (weight) over the last
    dimension; statistics in float, the mean subtracted before squaring."""
    s = DTYPES[dtype]
    t = s.c_type
    names = parameters(signature)
    x = names[0]
    eps_c = float_literal(eps)
    if op == "layer_norm":
        stats = f"""  float acc = 0.f;
{row_loop(dtype, "acc += x;")}
  const float mean = block_sum(acc) / (float)cols;
  float sq = 0.f;
{row_loop(dtype, "sq += (x - mean) * (x - mean);")}
  const float rstd = rsqrtf(block_sum(sq) / (float)cols + {eps_c});"""
        write = f"(x - mean) * rstd * {s.load.format('weight[c]')} + {s.load.format('bias[c]')}"
        params = f", const {t} *__restrict__ weight, const {t} *__restrict__ bias"
        ptr_args = f", {pointer(names[1], dtype)}, {pointer(names[2], dtype)}"
        word = "Layer norm"
    else:
        stats = f"""  float sq = 0.f;
{row_loop(dtype, "sq += x * x;")}
  const float rstd = rsqrtf(block_sum(sq) / (float)cols + {eps_c});"""
        write = f"x * rstd * {s.load.format('weight[c]')}"
        params = f", const {t} *__restrict__ weight"
        ptr_args = f", {pointer(names[1], dtype)}"
        word = "RMS norm"
    kernel = f"""
constexpr int kThreads = {threads_for(cols)};
{block_fold("sum")}
__global__ void row_{op}_kernel(const {t} *__restrict__ in{params}, {t} *__restrict__ out,
                              int64_t cols{vec_param(dtype)}) {{
  const {t} *row = in + (int64_t)blockIdx.x * cols;
  {t} *dst = out + (int64_t)blockIdx.x * cols;
{stats}
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {{
    const float x = {s.load.format("row[c]")};
    dst[c] = {s.store.format(write)};
  }}
}}
"""
    alloc = f"  auto out = torch::empty_like({x});"
    args = (f"{pointer(x, dtype)}{ptr_args}, {pointer('out', dtype, const=False)}, "
            f"cols{vec_arg(dtype)}")
    return (f"{header(dtype)}\n// {word} of each row (last dimension, eps {eps}), "
            f"one block per row.\n{kernel}\n"
            + launch_rows(f"row_{op}", signature, dtype, alloc, args))


def arg_reduction_source(op, signature, dtype, cols):
    """torch.argmax / torch.argmin over the last dimension: [..., N] ->
    int64 [...]. Ties go to the first index and NaN counts as the extreme,
    as in PyTorch; each thread keeps its (value, index) pair, warp shuffles
    and one shared-memory step combine them."""
    s = DTYPES[dtype]
    t = s.c_type
    x = parameters(signature)[0]
    cmp = ">" if op == "argmax" else "<"
    kernel = f"""
constexpr int kThreads = {threads_for(cols)};

// Whether (v, i) wins over (best, at): the {'larger' if op == 'argmax' else 'smaller'} value, NaN before any number,
// the lower index on a tie.
__device__ __forceinline__ bool wins(float v, int64_t i, float best, int64_t at) {{
  if (isnan(v) || isnan(best))
    return isnan(v) && (!isnan(best) || i < at);
  return v {cmp} best || (v == best && i < at);
}}

__device__ __forceinline__ void warp_pick(float &v, int64_t &i) {{
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {{
    const float ov = __shfl_xor_sync(0xffffffffu, v, offset);
    const int64_t oi = __shfl_xor_sync(0xffffffffu, i, offset);
    if (wins(ov, oi, v, i)) {{
      v = ov;
      i = oi;
    }}
  }}
}}

__global__ void row_{op}_kernel(const {t} *__restrict__ in, int64_t *__restrict__ out,
                                int64_t cols) {{
  __shared__ float part_v[32];
  __shared__ int64_t part_i[32];
  const {t} *row = in + (int64_t)blockIdx.x * cols;
  float best = {s.load.format("row[0]")};
  int64_t at = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {{
    const float v = {s.load.format("row[c]")};
    if (wins(v, c, best, at)) {{
      best = v;
      at = c;
    }}
  }}
  warp_pick(best, at);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {{
    part_v[warp] = best;
    part_i[warp] = at;
  }}
  __syncthreads();
  if (warp == 0) {{
    const int warps = (blockDim.x + 31) >> 5;
    best = lane < warps ? part_v[lane] : part_v[0];
    at = lane < warps ? part_i[lane] : part_i[0];
    warp_pick(best, at);
    if (lane == 0)
      out[blockIdx.x] = at;
  }}
}}
"""
    alloc = reduced_alloc(x, f"{x}.options().dtype(at::kLong)")
    args = f"{pointer(x, dtype)}, out.data_ptr<int64_t>(), cols"
    return (f"{header(dtype)}\n// {op} of each row (last dimension), one block per row.\n"
            f"{kernel}\n" + launch_rows(f"row_{op}", signature, dtype, alloc, args,
                                        vectorised=False))
