"""Elementwise tasks: unary activations, binary ops with a broadcast
operand, and chains of them fused into one kernel.

A computation is a list of C statements on `float v` (the first input's
value; a second input's value is `b`), each with the PyTorch expression it
stands for. The kernel: float4 loads over the body with a grid-stride loop
when fp32 and the shapes allow, a scalar grid-stride kernel for the tail
(and for half/bfloat16, computed in float)."""

from dataclasses import dataclass

from dice.corpus.cuda_common import (DTYPES, blocks_for, definition_head, header,
                                     input_checks, parameters, pointer)

F = "torch.nn.functional"


@dataclass(frozen=True)
class Unary:
    torch: str       # PyTorch expression of `{x}`
    cuda: str        # C statement(s) updating float v


# name -> (PyTorch, CUDA). The CUDA side follows PyTorch's definitions
# (softplus's threshold 20, hardsigmoid as relu6(x + 3) / 6, ...), so the
# two agree to rounding; domain-restricted functions take |x| first.
UNARY = {
    "relu": Unary("torch.relu({x})", "v = fmaxf(v, 0.f);"),
    "gelu_tanh": Unary(f'{F}.gelu({{x}}, approximate="tanh")',
                       "v = 0.5f * v * (1.f + tanhf(0.7978845608028654f * "
                       "(v + 0.044715f * v * v * v)));"),
    "gelu_erf": Unary(f"{F}.gelu({{x}})", "v = 0.5f * v * (1.f + erff(v * 0.7071067811865476f));"),
    "silu": Unary(f"{F}.silu({{x}})", "v = v / (1.f + expf(-v));"),
    "sigmoid": Unary("torch.sigmoid({x})", "v = 1.f / (1.f + expf(-v));"),
    "tanh": Unary("torch.tanh({x})", "v = tanhf(v);"),
    "exp": Unary("torch.exp({x})", "v = expf(v);"),
    "expm1": Unary("torch.expm1({x})", "v = expm1f(v);"),
    "log1p_abs": Unary("torch.log1p(torch.abs({x}))", "v = log1pf(fabsf(v));"),
    "abs": Unary("torch.abs({x})", "v = fabsf(v);"),
    "neg": Unary("torch.neg({x})", "v = -v;"),
    "softplus": Unary(f"{F}.softplus({{x}})", "v = v > 20.f ? v : log1pf(expf(v));"),
    "elu": Unary(f"{F}.elu({{x}})", "v = v > 0.f ? v : expm1f(v);"),
    "selu": Unary("torch.selu({x})",
                  "v = 1.0507009873554805f * (v > 0.f ? v : 1.6732632423543772f * expm1f(v));"),
    "celu": Unary(f"{F}.celu({{x}}, alpha=0.5)", "v = v > 0.f ? v : 0.5f * expm1f(v / 0.5f);"),
    "leaky_relu": Unary(f"{F}.leaky_relu({{x}}, 0.01)", "v = v > 0.f ? v : 0.01f * v;"),
    "hardtanh": Unary(f"{F}.hardtanh({{x}})", "v = fminf(fmaxf(v, -1.f), 1.f);"),
    "relu6": Unary(f"{F}.relu6({{x}})", "v = fminf(fmaxf(v, 0.f), 6.f);"),
    "hardsigmoid": Unary(f"{F}.hardsigmoid({{x}})", "v = fminf(fmaxf(v + 3.f, 0.f), 6.f) / 6.f;"),
    "hardswish": Unary(f"{F}.hardswish({{x}})", "v = v * fminf(fmaxf(v + 3.f, 0.f), 6.f) / 6.f;"),
    "mish": Unary(f"{F}.mish({{x}})",
                  "v = v * tanhf(v > 20.f ? v : log1pf(expf(v)));"),
    "square": Unary("torch.square({x})", "v = v * v;"),
    "sqrt_abs": Unary("torch.sqrt(torch.abs({x}))", "v = sqrtf(fabsf(v));"),
    "rsqrt_abs1": Unary("torch.rsqrt(torch.abs({x}) + 1.0)", "v = rsqrtf(fabsf(v) + 1.f);"),
    "reciprocal_abs1": Unary("torch.reciprocal(torch.abs({x}) + 1.0)",
                             "v = 1.f / (fabsf(v) + 1.f);"),
    "clamp": Unary("torch.clamp({x}, min=-0.5, max=0.5)", "v = fminf(fmaxf(v, -0.5f), 0.5f);"),
    "sin": Unary("torch.sin({x})", "v = sinf(v);"),
    "cos": Unary("torch.cos({x})", "v = cosf(v);"),
    "softsign": Unary(f"{F}.softsign({{x}})", "v = v / (1.f + fabsf(v));"),
    "tanhshrink": Unary(f"{F}.tanhshrink({{x}})", "v = v - tanhf(v);"),
    "softshrink": Unary(f"{F}.softshrink({{x}}, 0.5)",
                        "v = v > 0.5f ? v - 0.5f : (v < -0.5f ? v + 0.5f : 0.f);"),
    "hardshrink": Unary(f"{F}.hardshrink({{x}}, 0.5)", "v = fabsf(v) > 0.5f ? v : 0.f;"),
    "logsigmoid": Unary(f"{F}.logsigmoid({{x}})",
                        "v = fminf(v, 0.f) - log1pf(expf(-fabsf(v)));"),
    "erf": Unary("torch.erf({x})", "v = erff(v);"),
    "sign": Unary("torch.sign({x})", "v = v > 0.f ? 1.f : (v < 0.f ? -1.f : 0.f);"),
    "floor": Unary("torch.floor({x})", "v = floorf(v);"),
    # torch.round rounds halves to even, as rintf does.
    "round": Unary("torch.round({x})", "v = rintf(v);"),
    "exp2": Unary("torch.exp2({x})", "v = exp2f(v);"),
    "log_abs1": Unary("torch.log(torch.abs({x}) + 1.0)", "v = logf(fabsf(v) + 1.f);"),
}

# name -> (PyTorch of {x} and {y}, C statement with v and b).
BINARY = {
    "add": ("{x} + {y}", "v = v + b;"),
    "sub": ("{x} - {y}", "v = v - b;"),
    "mul": ("{x} * {y}", "v = v * b;"),
    "div": ("{x} / {y}", "v = v / b;"),
    "maximum": ("torch.maximum({x}, {y})", "v = fmaxf(v, b);"),
    "minimum": ("torch.minimum({x}, {y})", "v = fminf(v, b);"),
}

# How the second input is laid out against the first ([..., M, N]).
BROADCASTS = {
    "full": ("same shape", "i"),
    "row": ("a bias row of N values", "i % cols"),
    "col": ("a bias column of M values, [M, 1]", "i / cols"),
}


def kernel_body(statements, indent="    "):
    return "\n".join(indent + s for s in statements)


def vector_kernel(name, statements, broadcast):
    """fp32, float4 at a time; needs cols % 4 == 0 when broadcasting."""
    second = broadcast is not None
    params = "const float *__restrict__ a0, " + \
        ("const float *__restrict__ a1, " if second else "") + \
        "float *__restrict__ out, int64_t n4, int64_t cols"
    loads = ["const float4 x4 = reinterpret_cast<const float4 *>(a0)[i];",
             "float e[4] = {x4.x, x4.y, x4.z, x4.w};"]
    if broadcast in ("full", "row"):
        index = "i" if broadcast == "full" else "(i * 4 % cols) / 4"
        loads += [f"const float4 b4 = reinterpret_cast<const float4 *>(a1)[{index}];",
                  "const float f[4] = {b4.x, b4.y, b4.z, b4.w};"]
    elif broadcast == "col":
        # The four values lie in one row (cols % 4 == 0): one bias value.
        loads += ["const float bc = a1[i * 4 / cols];"]
    b_value = {"full": "f[k]", "row": "f[k]", "col": "bc"}.get(broadcast)
    lane = ["float v = e[k];"] + ([f"const float b = {b_value};"] if second else []) + \
        statements + ["e[k] = v;"]
    return f"""
__global__ void {name}_vec4_kernel({params}) {{
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += stride) {{
{kernel_body(loads)}
#pragma unroll
    for (int k = 0; k < 4; ++k) {{
{kernel_body(lane, "      ")}
    }}
    reinterpret_cast<float4 *>(out)[i] = make_float4(e[0], e[1], e[2], e[3]);
  }}
}}
"""


def scalar_kernel(name, statements, broadcast, dtype):
    s = DTYPES[dtype]
    second = broadcast is not None
    t = s.c_type
    params = f"const {t} *__restrict__ a0, " + (f"const {t} *__restrict__ a1, " if second else "") \
        + f"{t} *__restrict__ out, int64_t start, int64_t n, int64_t cols"
    lines = [f"float v = {s.load.format('a0[i]')};"]
    if second:
        lines.append(f"const float b = {s.load.format('a1[' + BROADCASTS[broadcast][1] + ']')};")
    lines += statements + [f"out[i] = {s.store.format('v')};"]
    return f"""
__global__ void {name}_kernel({params}) {{
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = start + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride) {{
{kernel_body(lines)}
  }}
}}
"""


def elementwise_source(name, comment, statements, signature, dtype, broadcast, cols):
    """The whole CUDA source of an elementwise task: kernels + dice_forward.
    `broadcast` is None (one input) or a BROADCASTS key; `cols` the last
    dimension, which decides whether float4 loads fit a broadcast."""
    names = parameters(signature)
    vectorised = dtype == "float32" and (broadcast in (None, "full") or cols % 4 == 0)
    kernels = (vector_kernel(name, statements, broadcast) if vectorised else "") + \
        scalar_kernel(name, statements, broadcast, dtype)
    t = DTYPES[dtype].c_type
    locals_ = [f"  const {t} *in{i} = {pointer(n, dtype)};" for i, n in enumerate(names)]
    locals_.append(f"  {t} *dst = {pointer('out', dtype, const=False)};")
    args = ", ".join(f"in{i}" for i in range(len(names))) + ", dst"
    host = [input_checks(names, [dtype] * len(names)),
            f"  auto out = torch::empty_like({names[0]});",
            "  const int64_t n = out.numel();",
            "  if (n == 0)\n    return out;",
            f"  const int64_t cols = {names[0]}.size(-1);",
            *locals_,
            "  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();",
            "  constexpr int threads = 256;",
            "  int64_t done = 0;"]
    if vectorised:
        aligned = " && ".join(f"aligned16({p})" for p in
                              [f"in{i}" for i in range(len(names))] + ["dst"])
        host.append(f"""  // float4 over the body when every pointer is 16-byte aligned.
  auto aligned16 = [](const void *p) {{ return reinterpret_cast<uintptr_t>(p) % 16 == 0; }};
  if ({aligned}) {{
    const int64_t n4 = n / 4;
    if (n4 > 0)
      {name}_vec4_kernel<<<{blocks_for("n4")}, threads, 0, stream>>>({args}, n4, cols);
    done = n4 * 4;
  }}""")
    host.append(f"""  if (done < n)
    {name}_kernel<<<{blocks_for("(n - done)")}, threads, 0, stream>>>(
        {args}, done, n, cols);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;""")
    return (f"{header(dtype)}\n// {comment}\n{kernels}\n{definition_head(signature)} {{\n"
            + "\n".join(host) + "\n}\n")
