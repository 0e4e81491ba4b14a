"""What every emitter's `dice_forward` shares: the input checks, the
outputs' allocation, the kernels' pointers and the return."""

import re

from dice.corpus.cuda_common import (DTYPES, HEADER, definition_head, input_checks, parameters,
                                     pointer)

ROUNDING = {
    "float16": "__device__ __forceinline__ float round_half(float v) {\n"
               "  return __half2float(__float2half_rn(v));\n}",
    "bfloat16": "__device__ __forceinline__ float round_bf16(float v) {\n"
                "  return __bfloat162float(__float2bfloat16_rn(v));\n}",
}


class Unsupported(ValueError):
    """A program an emitter does not take."""


# Sizes in the answers: every number an emitter writes for a size is a
# dimension the prompt shows, and a product of several is written out
# ("4 * 384", never "1536"), so what a model learns to write is a copy of
# the prompt, not arithmetic on it.
def size_expression(dims, wide=False):
    """The product of `dims` as C (sizes of 1 left out; "1" for none);
    `wide` makes it 64-bit (an LL first factor)."""
    factors = [str(d) for d in dims if d != 1] or ["1"]
    if wide:
        factors[0] += "LL"
    return " * ".join(factors)


def stride_expressions(shape):
    """Each dim's row-major stride in `shape`, as size_expression writes it."""
    return [size_expression(shape[d + 1:]) for d in range(len(shape))]


def over(expression):
    """`expression` as a divisor or a factor: parenthesised if a product
    (and not already in parentheses of its own)."""
    return expression if " " not in expression or _enclosed(expression) else f"({expression})"


def _enclosed(expression):
    """Whether `expression` is one parenthesised whole: `(a + b)`, not
    `(a) * (b)`."""
    if not expression.startswith("("):
        return False
    depth = 0
    for n, ch in enumerate(expression):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0:
            return n == len(expression) - 1
    return False


def declaration(program, names=None):
    """A `dice_forward` declaration for `program`: its k-th parameter named
    `names[k]` (`x<k>` by default), a vector of results where it has
    several."""
    names = names or [f"x{k}" for k in range(len(program["inputs"]))]
    result = "std::vector<torch::Tensor>" if len(program["outputs"]) > 1 else "torch::Tensor"
    return f"{result} dice_forward({', '.join(f'torch::Tensor {n}' for n in names)});"


def shape_check(name, shape):
    """TORCH_CHECK that tensor `name` has `shape`."""
    dims = ", ".join(str(s) for s in shape)
    condition = (f"{name}.dim() == 0" if not shape else
                 f"{name}.sizes() == at::IntArrayRef({{{dims}}})")
    return f"  TORCH_CHECK({condition}, \"{name} must be of shape [{dims}]\");"


def source_head(program, signature):
    """(the `dice_forward` parameter names, the source's opening: includes
    and the rounding helpers of the program's half-precision dtypes).
    Raises Unsupported for a dtype the inputs or results cannot have."""
    names = parameters(signature)
    if len(names) != len(program["inputs"]):
        raise ValueError(f"signature has {len(names)} parameters, "
                         f"program {len(program['inputs'])} inputs")
    types = list(program["inputs"]) + [op["type"] for op in program["ops"]]
    for t in program["inputs"]:
        if t["dtype"] not in DTYPES:
            raise Unsupported(f"dtype {t['dtype']}")
    for o in program["outputs"]:
        if types[o]["dtype"] not in DTYPES and types[o]["dtype"] != "int64":
            raise Unsupported(f"dtype {types[o]['dtype']}")
    dtypes = sorted({t["dtype"] for t in types} & set(DTYPES))
    head = HEADER + "#include <c10/cuda/CUDAException.h>\n#include <cmath>\n" + "".join(
        DTYPES[d].header for d in dtypes)
    return names, "\n".join([head.rstrip("\n"), ""] + [ROUNDING[d] + "\n" for d in dtypes
                                                       if d in ROUNDING])


class HostFunction:
    """`dice_forward` of a program with static shapes, up to its launches."""

    def __init__(self, program, signature, names):
        self.signature = signature
        types = list(program["inputs"]) + [op["type"] for op in program["ops"]]
        in_dtypes = [t["dtype"] for t in program["inputs"]]
        self.out_types = [types[o] for o in program["outputs"]]
        self.lines = [definition_head(signature) + " {", input_checks(names, in_dtypes)]
        self.lines += [shape_check(name, t["shape"]) for name, t in zip(names, program["inputs"])]
        self.outs = []
        for j, t in enumerate(self.out_types):
            shape = "{" + ", ".join(str(s) for s in t["shape"]) + "}"
            kind = "at::kLong" if t["dtype"] == "int64" else DTYPES[t["dtype"]].kind
            self.lines.append(f"  auto y{j} = torch::empty({shape}, {names[0]}.options()"
                              f".dtype({kind}));")
            self.outs.append(f"y{j}")
        self.pointers = [pointer(n, d) for n, d in zip(names, in_dtypes)] + [
            f"y{j}.data_ptr<int64_t>()" if t["dtype"] == "int64"
            else pointer(f"y{j}", t["dtype"], const=False)
            for j, t in enumerate(self.out_types)]

    def text(self, launches):
        """The whole function, `launches` (lines) between the allocation
        and the return."""
        if len(self.outs) == 1 and not self.signature.strip().startswith("std::vector"):
            result = f"  return {self.outs[0]};"
        else:
            result = f"  return {{{', '.join(self.outs)}}};"
        return "\n".join(self.lines + launches +
                         ["  C10_CUDA_KERNEL_LAUNCH_CHECK();", result, "}"])


def one_kernel_source(program, signature, kernel, launches):
    """The CUDA source of an emitter with one kernel: the includes and
    helpers, `kernel(in_params, out_params, out_dtypes)`, and
    `dice_forward` with exactly `signature`, `launches(pointers)` the
    lines that launch the kernel."""
    names, head = source_head(program, signature)
    types = list(program["inputs"]) + [op["type"] for op in program["ops"]]
    out_dtypes = [types[o]["dtype"] for o in program["outputs"]]
    in_params, out_params = kernel_parameters(program)
    host = HostFunction(program, signature, names)
    return "\n".join([head, kernel(in_params, out_params, out_dtypes),
                      host.text(launches(host.pointers))]) + "\n"


def element_launch(kernel):
    """`launches` for one_kernel_source: `kernel` over y0's elements, a
    thread an element, grid-stride past 65535 blocks."""
    return lambda pointers: [
        "  const int64_t n = y0.numel();",
        "  const int threads = 256;",
        "  const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 65535);",
        f"  {kernel}<<<blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>("
        f"{', '.join(pointers)});"]


def kernel_parameters(program):
    """The kernels' pointer parameters: x<k> for inputs, y<j> for results."""
    types = list(program["inputs"]) + [op["type"] for op in program["ops"]]
    ins = [f"const {DTYPES[t['dtype']].c_type} *__restrict__ x{k}"
           for k, t in enumerate(program["inputs"])]
    outs = [f"{'int64_t' if types[o]['dtype'] == 'int64' else DTYPES[types[o]['dtype']].c_type}"
            f" *__restrict__ y{j}" for j, o in enumerate(program["outputs"])]
    return ins, outs


def buffer_allocation(name, shape, kind, like):
    """`dice_forward`'s line allocating buffer `name` (a result a later
    kernel reads) of `shape` and ATen dtype `kind` on tensor `like`'s
    device."""
    dims = ", ".join(str(d) for d in shape)
    return f"  auto {name} = torch::empty({{{dims}}}, {like}.options().dtype({kind}));"


def used_parameters(kernel, name, params, outs, pointers):
    """(`kernel`, the function `name` taking `params` then `outs`, with
    each of `params` that its body never reads dropped from its head; the
    `pointers` of the kept ones): a kernel of several takes only the
    inputs and buffers it reads."""
    head = f"{name}({', '.join(params + outs)})"
    body = kernel[kernel.index(head) + len(head):]
    used = [re.search(rf"\b{param.split()[-1]}\b", body) is not None for param in params]
    kept = [param for param, u in zip(params, used) if u]
    return (kernel.replace(head, f"{name}({', '.join(kept + outs)})", 1),
            [ptr for ptr, u in zip(pointers, used) if u])
