"""The CUDA kernel for any elementwise reference program with static
shapes: one fused pass over the output's elements.

Each value is computed in registers at the output element's index; an
operand of a broadcast shape is read at the offset its own strides give
that index (constant divisors, which nvcc turns into multiplies). Half and
bfloat16 values live in float registers and are rounded to their dtype
after every op, as PyTorch rounds after each of its kernels, so the kernel
agrees with the reference program to the last bit wherever the math
library does.

A float32 program whose operands are the output's shape, rows along its
last dimension, or constant along it reads float4 vectors when every
pointer is 16-byte aligned (a scalar kernel takes the tail and the
unaligned case).
"""

import math

from dice.corpus.cuda_common import DTYPES, float_literal
from dice.engine.emit_host import (HostFunction, Unsupported, kernel_parameters, over,
                                    size_expression, source_head, stride_expressions)

FLOAT_T = {"float32": "float", "float16": "float", "bfloat16": "float", "float64": "double",
           "bool": "bool", "int64": "long long"}
ROUND = {"float16": "round_half", "bfloat16": "round_bf16"}

# name -> C expression over a (and the op's `value` as {v}), in float.
UNARY_C = {
    "neg": "-{a}", "exp": "expf({a})", "log": "logf({a})", "log1p": "log1pf({a})",
    "expm1": "expm1f({a})", "tanh": "tanhf({a})", "sqrt": "sqrtf({a})",
    "rsqrt": "rsqrtf({a})", "erf": "erff({a})", "abs": "fabsf({a})", "sin": "sinf({a})",
    "cos": "cosf({a})", "tan": "tanf({a})", "floor": "floorf({a})", "ceil": "ceilf({a})",
    "round": "rintf({a})", "trunc": "truncf({a})", "exp2": "exp2f({a})",
    "reciprocal": "1.0f / {a}", "sigmoid": "1.0f / (1.0f + expf(-{a}))",
    "atan": "atanf({a})", "asin": "asinf({a})", "acos": "acosf({a})", "sinh": "sinhf({a})",
    "cosh": "coshf({a})", "asinh": "asinhf({a})", "acosh": "acoshf({a})",
    "atanh": "atanhf({a})", "log2": "log2f({a})", "log10": "log10f({a})",
    "silu": "{a} / (1.0f + expf(-{a}))",
    "gelu": "0.5f * {a} * (1.0f + erff({a} * 0.70710678118654752f))",
    "gelu_tanh": "0.5f * {a} * (1.0f + tanhf(0.79788456080286536f * ({a} + 0.044715f * {a} * "
                 "{a} * {a})))",
    "mish": "{a} * tanhf(log1pf(expf({a})))",
    "hardsigmoid": "fminf(fmaxf({a} + 3.0f, 0.0f), 6.0f) / 6.0f",
    "hardswish": "{a} * fminf(fmaxf({a} + 3.0f, 0.0f), 6.0f) / 6.0f",
    "selu": "1.0507009873554805f * ({a} > 0.0f ? {a} : 1.6732632423543772f * expm1f({a}))",
    "relu6": "fminf(fmaxf({a}, 0.0f), 6.0f)",
    "logsigmoid": "fminf({a}, 0.0f) - log1pf(expf(-fabsf({a})))",
    "leaky_relu": "({a} > 0.0f ? {a} : {a} * {v})",
    "elu": "({a} > 0.0f ? {a} : {v} * expm1f({a}))",
    "celu": "({a} > 0.0f ? {a} : {v} * expm1f({a} / {v}))",
    "softplus": "({a} > {v} ? {a} : log1pf(expf({a})))",
}
BINARY_C = {
    "add": "{a} + {b}", "sub": "{a} - {b}", "mul": "{a} * {b}", "div": "{a} / {b}",
    "maximum": "fmaxf({a}, {b})", "minimum": "fminf({a}, {b})", "pow": "powf({a}, {b})",
    "atan2": "atan2f({a}, {b})", "remainder": "fmodf({a}, {b})",
    "gt": "{a} > {b}", "ge": "{a} >= {b}", "lt": "{a} < {b}", "le": "{a} <= {b}",
    "eq": "{a} == {b}", "ne": "{a} != {b}", "logical_and": "{a} && {b}",
    "logical_or": "{a} || {b}",
}
ELEMENTWISE = set(UNARY_C) | set(BINARY_C) | {"where", "to", "reshape", "scalar", "full",
                                              "logical_not"}


def _literal(value, c_type):
    """`value` (a number, or "inf"/"-inf" as programs write them) as a C
    literal of `c_type`."""
    if c_type == "bool":
        return "true" if value else "false"
    if c_type == "long long":
        return f"{int(value)}LL"
    value = float(value)
    if math.isinf(value):
        return "INFINITY" if value > 0 else "-INFINITY"
    if c_type == "double":
        return repr(value)
    return float_literal(value)


# Functions a float64 value may go through (torch-mlir's comparisons with a
# Python number and var/std's decomposition are the only float64 values).
DOUBLE_UNARY = {"neg", "abs", "sqrt"}


def unfused_sub(a, b, c_type):
    """`a - b` with `a` rounded to its type first, as PyTorch stores it:
    nvcc would otherwise fuse a product in `a` and the subtraction into one
    multiply-add, which does not round the product. Where `b` is the max or
    min of the values `a` is one of (softmax's shift), that leaves the
    product's rounding error, not 0, at the extreme element: at large inputs
    its exp overflows (inf / inf = NaN)."""
    if c_type == "double":
        return f"__dsub_rn({a}, {b})"
    if c_type == "float":
        return f"__fsub_rn({a}, {b})"
    return f"{a} - {b}"


def op_expression(op, names, operand_dtypes):
    """The C expression of an op that computes (not a constant, view or
    reshape) over operand expressions `names`, rounded to its dtype where
    that is half precision, as PyTorch rounds after each of its kernels."""
    fn = op["fn"]
    dtype = op["type"]["dtype"]
    c_type = FLOAT_T[dtype]
    if fn == "to":
        expr = f"static_cast<{c_type}>({names[0]})"
    elif fn == "where":
        return f"{names[0]} ? {names[1]} : {names[2]}"  # picks values already rounded
    elif fn == "logical_not":
        expr = f"!{names[0]}"
    elif fn in UNARY_C:
        if c_type == "double" and fn not in DOUBLE_UNARY:
            raise Unsupported(f"{fn} in float64")
        expr = UNARY_C[fn].format(a=names[0], v=_literal(op.get("value", 0.0), "float"))
    elif fn == "sub" and op.get("unfused"):
        expr = unfused_sub(names[0], names[1], c_type)
    elif fn in BINARY_C:
        expr = BINARY_C[fn].format(a=names[0], b=names[1])
    else:
        raise Unsupported(f"op {fn}")
    if "double" in (c_type, *(FLOAT_T[d] for d in operand_dtypes)):
        expr = expr.replace("f(", "(")  # the double overloads: sqrt, fabs, fmax, pow
    if dtype in ROUND and not (fn == "to" and operand_dtypes[0] in ROUND):
        expr = f"{ROUND[dtype]}({expr})"
    return expr


def constant_expression(op):
    """A `scalar` or `full` constant, as its dtype holds it; an element
    count a lowering added (`count_of`: dims) as their product written out."""
    value, dtype = op.get("value", 0.0), op["type"]["dtype"]
    if len(op.get("count_of", [])) > 1:
        return f"({FLOAT_T[dtype]})({size_expression(op['count_of'])})"
    if dtype in ROUND:
        return f"{ROUND[dtype]}({_literal(value, 'float')})"
    return _literal(value, FLOAT_T[dtype])


def inline_constant(op):
    """A `scalar` op as the expression its readers write in its place. The
    reference program the prompt shows writes such a number into the call
    that reads it (`torch.mul(t9, 0.25)`), so the kernel does too: every
    name the kernel declares is one the prompt shows. A negative one is
    parenthesized (`-{a}` of it must not read as `--`)."""
    expr = constant_expression(op)
    return f"({expr})" if expr.startswith("-") else expr


class _Kernel:
    def __init__(self, program):
        self.p = program
        ops = program["ops"]
        for op in ops:
            if op["fn"] not in ELEMENTWISE:
                raise Unsupported(f"op {op['fn']} is not elementwise")
        self.n_in = len(program["inputs"])
        self.types = [i for i in program["inputs"]] + [op["type"] for op in ops]
        self.out_shape = self.types[program["outputs"][0]]["shape"]
        for o in program["outputs"]:
            if self.types[o]["shape"] != self.out_shape:
                raise Unsupported("outputs of different shapes")
        if any(not isinstance(s, int) for t in self.types for s in t["shape"]):
            raise Unsupported("dynamic sizes")
        self.numel = math.prod(self.out_shape)
        self.rank = len(self.out_shape)
        self.places = self._places()

    def c_type(self, k):
        return FLOAT_T[self.types[k]["dtype"]]

    def _places(self):
        """For every value, the output dim that each of its dims of size
        above 1 stands at: the value at output element i is the value's
        element at those coordinates of i. A reshape may only insert or drop
        dims of size 1 (a lift with leading 1s, `w.view(1, -1, 1, 1)`), which
        keeps the elements in order, so it passes its places on; any other
        op reads its operands (the same rank, 1s where they broadcast) at its
        own places. Values are visited from the outputs back."""
        places = {o: {d: d for d, s in enumerate(self.out_shape) if s != 1}
                  for o in self.p["outputs"]}
        for i in reversed(range(len(self.p["ops"]))):
            k = self.n_in + i
            op = self.p["ops"][i]
            if k not in places:
                raise Unsupported(f"t{k} reaches no output")
            shape = self.types[k]["shape"]
            for a in op["args"]:
                source = self.types[a]["shape"]
                if op["fn"] == "reshape":
                    ours = [d for d, s in enumerate(shape) if s != 1]
                    theirs = [d for d, s in enumerate(source) if s != 1]
                    if [shape[d] for d in ours] != [source[d] for d in theirs]:
                        raise Unsupported(f"reshape of {source} to {shape}")
                    place = {d: places[k][e] for d, e in zip(theirs, ours)}
                else:
                    place = {d: places[k][d] for d, s in enumerate(source) if s != 1}
                if places.setdefault(a, place) != place:
                    raise Unsupported(f"{'x' if a < self.n_in else 't'}{a} is read at two "
                                      "different views")
        return places

    def in_view(self, k):
        """Input k's shape as the output's rank sees it: its sizes at its
        places, 1s elsewhere."""
        view = [1] * self.rank
        for d, e in self.places.get(k, {}).items():
            view[e] = self.types[k]["shape"][d]
        return view

    def offset(self, k, index="i"):
        """Input k's element offset for output element `index`: the output
        coordinate of each dim the input does not broadcast, times the
        input's stride there."""
        view = self.in_view(k)
        if view == list(self.out_shape):
            return index
        strides, out_strides = stride_expressions(view), stride_expressions(self.out_shape)
        terms = []
        for d, size in enumerate(view):
            if size == 1:
                continue
            coord = index if out_strides[d] == "1" else f"{index} / {over(out_strides[d])}"
            if d > 0:
                coord = f"({coord}) % {size}" if " " in coord else f"{coord} % {size}"
                coord = f"({coord})"
            terms.append(coord if strides[d] == "1" else f"{coord} * {strides[d]}")
        return " + ".join(terms) or "0"

    # --- the per-element function ---------------------------------------------
    def element_function(self):
        """`fused(float x0, ..., float &o0, ...)`: the program on one
        element, its variables named as the reference program names them."""
        names = {}
        name = lambda k: f"x{k}" if k < self.n_in else names.get(k, f"t{k}")
        ins = [f"{self.c_type(k)} x{k}" for k in range(self.n_in)]
        outs = [f"{FLOAT_T[self.types[o]['dtype']]} &o{j}"
                for j, o in enumerate(self.p["outputs"])]
        lines = [f"__device__ __forceinline__ void fused({', '.join(ins + outs)}) {{"]
        for i, op in enumerate(self.p["ops"]):
            k = self.n_in + i
            if op["fn"] == "scalar":
                names[k] = inline_constant(op)
                continue
            if op["fn"] == "full":
                expr = constant_expression(op)
            elif op["fn"] == "reshape":  # a lift to the output's rank: the same element
                expr = name(op["args"][0])
            else:
                expr = op_expression(op, [name(a) for a in op["args"]],
                                     [self.types[a]["dtype"] for a in op["args"]])
            lines.append(f"  const {self.c_type(k)} {name(k)} = {expr};")
        for j, o in enumerate(self.p["outputs"]):
            lines.append(f"  o{j} = {name(o)};")
        lines.append("}")
        return "\n".join(lines)


def _load(k, dtype, ptr_index):
    return DTYPES[dtype].load.format(f"x{k}[{ptr_index}]")


def emit(program, signature):
    """The CUDA source (kernels and `dice_forward` with exactly `signature`)
    computing `program`. Raises Unsupported for other programs."""
    kernel = _Kernel(program)
    names, head = source_head(program, signature)
    in_dtypes = [t["dtype"] for t in program["inputs"]]
    out_dtypes = [kernel.types[o]["dtype"] for o in program["outputs"]]
    parts = [head]
    parts += [kernel.element_function(), ""]

    n_out = len(program["outputs"])
    in_params, out_params = kernel_parameters(program)
    loads = [f"    const {kernel.c_type(k)} a{k} = {_load(k, in_dtypes[k], kernel.offset(k))};"
             for k in range(kernel.n_in)]
    decls = [f"    {FLOAT_T[d]} r{j};" for j, d in enumerate(out_dtypes)]
    call = ", ".join([f"a{k}" for k in range(kernel.n_in)] + [f"r{j}" for j in range(n_out)])
    stores = [f"    y{j}[i] = {DTYPES[d].store.format(f'r{j}')};" for j, d in enumerate(out_dtypes)]
    parts.append("// One output element a thread, grid-stride, from element `start`.")
    parts.append(f"__global__ void fused_kernel({', '.join(in_params + out_params)}, "
                 "int64_t start) {")
    parts.append(f"  const int64_t n = {size_expression(kernel.out_shape, wide=True)};")
    parts.append("  for (int64_t i = start + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; "
                 "i < n;\n       i += (int64_t)gridDim.x * blockDim.x) {")
    parts += loads + decls
    parts.append(f"    fused({call});")
    parts += stores
    parts += ["  }", "}", ""]

    vector = _vector_plan(kernel, in_dtypes, out_dtypes)
    if vector:
        parts.append(_vector_kernel(kernel, vector, in_params, out_params, n_out))

    host = HostFunction(program, signature, names)
    parts.append(host.text(_launches(kernel, host.pointers, vector)))
    return "\n".join(parts) + "\n"


def _vector_plan(kernel, in_dtypes, out_dtypes):
    """How each input is read four elements at a time ('vec' or 'bcast'),
    or None when the program is not float32 or its last dim does not allow."""
    if set(in_dtypes + out_dtypes) != {"float32"} or kernel.numel < 4:
        return None
    last = kernel.out_shape[-1] if kernel.rank else 1
    plan = []
    for k in range(kernel.n_in):
        view = kernel.in_view(k)
        if view == list(kernel.out_shape):
            plan.append("vec")
        elif last % 4 == 0 and view[-1] == last:
            plan.append("vec")
        elif last % 4 == 0 and view[-1] == 1:
            plan.append("bcast")
        else:
            return None
    if last % 4 != 0 and not all(p == "vec" and kernel.in_view(k) == list(kernel.out_shape)
                                 for k, p in enumerate(plan)):
        return None
    return plan


def _vector_kernel(kernel, plan, in_params, out_params, n_out):
    lines = ["// Four elements a thread as float4 (16-byte aligned pointers), up to",
             "// the last multiple of four.",
             f"__global__ void fused_kernel_vec4({', '.join(in_params + out_params)}) {{",
             f"  const int64_t n4 = {size_expression(kernel.out_shape, wide=True)} / 4;",
             "  for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < n4;",
             "       q += (int64_t)gridDim.x * blockDim.x) {",
             "    const int64_t i = q * 4;"]
    for k, how in enumerate(plan):
        off = kernel.offset(k)
        if how == "vec":
            lines.append(f"    const float4 a{k} = *reinterpret_cast<const float4 *>(x{k} + {off});")
        else:
            lines.append(f"    const float b{k} = x{k}[{off}];")
    for j in range(n_out):
        lines.append(f"    float4 r{j};")
    for lane in "xyzw":
        args = [f"a{k}.{lane}" if how == "vec" else f"b{k}" for k, how in enumerate(plan)]
        args += [f"r{j}.{lane}" for j in range(n_out)]
        lines.append(f"    fused({', '.join(args)});")
    for j in range(n_out):
        lines.append(f"    *reinterpret_cast<float4 *>(y{j} + i) = r{j};")
    lines += ["  }", "}", ""]
    return "\n".join(lines)


def _launches(kernel, pointers, vector):
    lines = ["  const int64_t n = y0.numel();",
             "  const int threads = 256;",
             "  cudaStream_t stream = c10::cuda::getCurrentCUDAStream();",
             "  int64_t done = 0;"]
    if vector:
        aligned = " && ".join(f"reinterpret_cast<uintptr_t>({p}) % 16 == 0" for p in pointers)
        lines += [f"  if ({aligned}) {{",
                  "    const int64_t n4 = n / 4;",
                  "    if (n4 > 0) {",
                  "      const int blocks = (int)std::min<int64_t>((n4 + threads - 1) / threads,"
                  " 65535);",
                  f"      fused_kernel_vec4<<<blocks, threads, 0, stream>>>({', '.join(pointers)});",
                  "    }",
                  "    done = n4 * 4;",
                  "  }"]
    lines += ["  if (done < n) {",
              "    const int blocks = (int)std::min<int64_t>((n - done + threads - 1) / threads,"
              " 65535);",
              f"    fused_kernel<<<blocks, threads, 0, stream>>>({', '.join(pointers)}, done);",
              "  }"]
    return lines
