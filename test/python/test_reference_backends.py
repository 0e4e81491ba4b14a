"""The reference program's two backends agree with PyTorch and with each other.

For hand-built programs covering the whole vocabulary, three computations
must match on random inputs: the ATen executor (`dice-reference-run`), the
Python `Model` the printer writes (`dice-reference-run --print-python`, then
exec'd), and an independent PyTorch expression written here. The executor
and the printed model make the same torch calls, so they must agree exactly.
"""

import json
import os
import subprocess

import pytest
import torch
import torch.nn.functional as F

from build_tree import BUILD_DIR
from dice import reference_ops
from dice.reference_program import value_to_json

REFERENCE_RUN = BUILD_DIR / "bin" / "dice-reference-run"
# DICE_TEST_DEVICE=cuda runs both backends on the GPU (the reference stays on the CPU).
DEVICE = os.environ.get("DICE_TEST_DEVICE", "cpu")

pytestmark = pytest.mark.skipif(
    not REFERENCE_RUN.exists(), reason=f"{REFERENCE_RUN} is not built"
)

# ---------------------------------------------------------------------------
# Building programs
# ---------------------------------------------------------------------------


class Program:
    """A ReferenceProgram in its JSON form; values are numbered as in C++."""

    def __init__(self, *inputs):
        self.inputs = [{"shape": list(s), "dtype": d} for s, d in inputs]
        self.ops = []
        self.outputs = []

    def op(self, fn, args, shape, dtype, value=None, **ints):
        entry = {"fn": fn, "args": list(args), "type": {"shape": list(shape), "dtype": dtype}}
        if ints:
            entry["ints"] = {k: list(v) for k, v in ints.items()}
        if value is not None:
            entry["value"] = value_to_json(value)
        self.ops.append(entry)
        return len(self.inputs) + len(self.ops) - 1

    def ret(self, *values):
        self.outputs = list(values)
        return self

    def json(self):
        return {"inputs": self.inputs, "ops": self.ops, "outputs": self.outputs}


DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "float64": torch.float64,
    "int64": torch.int64,
    "int32": torch.int32,
    "bool": torch.bool,
}


def random_inputs(program, positive, seed):
    gen = torch.Generator().manual_seed(seed)
    tensors = []
    for spec in program.inputs:
        shape, dtype = spec["shape"], DTYPES[spec["dtype"]]
        if dtype == torch.bool:
            t = torch.rand(shape, generator=gen) > 0.5
        elif not dtype.is_floating_point:
            t = torch.randint(-9, 10, shape, generator=gen, dtype=dtype)
        elif positive:
            t = (torch.rand(shape, generator=gen) + 0.1).to(dtype)
        else:
            t = torch.randn(shape, generator=gen).to(dtype)
        tensors.append(t)
    return tensors


# ---------------------------------------------------------------------------
# The cases: (program, independent torch computation, inputs positive?)
# ---------------------------------------------------------------------------

F32, F16, I64, B = "float32", "float16", "int64", "bool"
CASES = {}


def case(name, positive=False):
    def register(build):
        CASES[name] = (build, positive)
        return build

    return register


UNARY = {
    "neg": torch.neg, "exp": torch.exp, "exp2": torch.exp2, "log": torch.log,
    "log1p": torch.log1p, "expm1": torch.expm1, "tanh": torch.tanh,
    "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "erf": torch.erf, "abs": torch.abs,
    "sin": torch.sin, "cos": torch.cos, "tan": torch.tan, "floor": torch.floor,
    "ceil": torch.ceil, "round": torch.round, "trunc": torch.trunc,
    "sigmoid": torch.sigmoid, "reciprocal": torch.reciprocal,
}
BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "maximum": torch.maximum, "minimum": torch.minimum,
    "pow": lambda a, b: a**b, "atan2": torch.atan2,
    "remainder": lambda a, b: torch.fmod(a, b),
}
COMPARE = {
    "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b, "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
}


@case("unary", positive=True)
def _():
    p = Program(([3, 5], F32))
    return p.ret(*[p.op(fn, [0], [3, 5], F32) for fn in UNARY]), lambda x: tuple(
        ref(x) for ref in UNARY.values())


@case("binary", positive=True)
def _():
    # Broadcasting: [3, 5] with [5].
    p = Program(([3, 5], F32), ([5], F32))
    return p.ret(*[p.op(fn, [0, 1], [3, 5], F32) for fn in BINARY]), lambda a, b: tuple(
        ref(a, b) for ref in BINARY.values())


@case("compare")
def _():
    p = Program(([4, 6], I64), ([4, 6], I64))
    s = p.op("scalar", [], [], I64, value=2)
    results = []
    for fn in COMPARE:
        results += [p.op(fn, [0, 1], [4, 6], B), p.op(fn, [0, s], [4, 6], B)]
    return p.ret(*results), lambda a, b: tuple(
        r for ref in COMPARE.values() for r in (ref(a, b), ref(a, 2)))


@case("logical")
def _():
    p = Program(([4, 6], B), ([4, 6], B))
    a = p.op("logical_and", [0, 1], [4, 6], B)
    o = p.op("logical_or", [0, 1], [4, 6], B)
    n = p.op("logical_not", [a], [4, 6], B)
    # A bool scalar beside a tensor stays a tensor for logical_and.
    t = p.op("scalar", [], [], B, value=1)
    k = p.op("logical_and", [o, t], [4, 6], B)
    return p.ret(n, k), lambda x, y: (~(x & y), x | y)


@case("bitwise-not")
def _():
    p = Program(([7], I64), ([7], B))
    return p.ret(p.op("bitwise_not", [0], [7], I64), p.op("bitwise_not", [1], [7], B)), (
        lambda a, b: (~a, ~b)
    )


@case("integer-division")
def _():
    # Rounding toward zero and toward -inf differ on operands of unlike sign.
    p = Program(([4, 6], I64), ([4, 6], I64))
    s = p.op("scalar", [], [], I64, value=-3)
    return p.ret(p.op("div_trunc", [0, 1], [4, 6], I64), p.op("div_floor", [0, 1], [4, 6], I64),
                 p.op("div_floor", [0, s], [4, 6], I64)), lambda a, b: (
        torch.div(a, b, rounding_mode="trunc"), torch.div(a, b, rounding_mode="floor"),
        torch.div(a, -3, rounding_mode="floor"))


@case("bitwise")
def _():
    p = Program(([4, 6], I64), ([4, 6], I64))
    return p.ret(*[p.op(fn, [0, 1], [4, 6], I64)
                   for fn in ("bitwise_and", "bitwise_or", "bitwise_xor")]), (
        lambda a, b: (a & b, a | b, a ^ b))


@case("arange-index")
def _():
    # A loop index along dim 1, and a gather at [rows[i], j].
    p = Program(([5, 3], F32), ([4], I64))
    j = p.op("arange", [], [1, 3], I64, dim=[1])
    rows = p.op("reshape", [1], [4, 1], I64)
    clipped = p.op("remainder", [rows, p.op("scalar", [], [], I64, value=5)], [4, 1], I64)
    positive = p.op("abs", [clipped], [4, 1], I64)
    return p.ret(j, p.op("index", [0, positive, j], [4, 3], F32)), lambda x, r: (
        torch.arange(3).reshape(1, 3), x[torch.fmod(r, 5).abs().reshape(4, 1), torch.arange(3)])


@case("reshape-0d")
def _():
    p = Program(([1, 1], F32))
    z = p.op("reshape", [0], [], F32)
    return p.ret(z, p.op("expand", [z], [2, 3], F32)), lambda x: (
        x.reshape(()), x.reshape(()).expand(2, 3))


@case("scalar-literals")
def _():
    # Number on either side of add/sub/mul/div/pow, and as a float16 operand.
    p = Program(([3, 4], F32), ([3, 4], F16))
    c = p.op("scalar", [], [], F32, value=2.5)
    h = p.op("scalar", [], [], F16, value=0.1)
    r1 = p.op("sub", [c, 0], [3, 4], F32)
    r2 = p.op("div", [0, c], [3, 4], F32)
    r3 = p.op("pow", [c, 0], [3, 4], F32)
    r4 = p.op("pow", [0, c], [3, 4], F32)
    r5 = p.op("mul", [1, h], [3, 4], F16)
    r6 = p.op("remainder", [0, c], [3, 4], F32)
    return p.ret(r1, r2, r3, r4, r5, r6), lambda x, y: (
        2.5 - x, x / 2.5, 2.5**x, x**2.5, y * 0.1, torch.fmod(x, 2.5))


@case("scalar-tensors")
def _():
    # Scalars where torch wants a tensor, alone, and as outputs.
    p = Program(([2, 3], F32))
    c = p.op("scalar", [], [], F32, value=-1.5)
    m = p.op("maximum", [0, c], [2, 3], F32)
    e = p.op("exp", [c], [], F32)
    h = p.op("to", [c], [], F16)
    x = p.op("expand", [c], [2, 3], F32)
    a = p.op("add", [c, c], [], F32)
    return p.ret(m, e, h, x, a, c), lambda t: (
        torch.clamp(t, min=-1.5), torch.exp(torch.tensor(-1.5)),
        torch.tensor(-1.5, dtype=torch.float16), torch.full((2, 3), -1.5),
        torch.tensor(-3.0), torch.tensor(-1.5))


@case("full")
def _():
    p = Program(([2, 3], F32))
    f = p.op("full", [], [2, 3], F32, value=0.25)
    i = p.op("full", [], [3], I64, value=7)
    return p.ret(p.op("add", [0, f], [2, 3], F32), i), lambda x: (
        x + 0.25, torch.full((3,), 7))


@case("where")
def _():
    p = Program(([3, 4], B), ([3, 4], F32), ([4], F32))
    c = p.op("scalar", [], [], F32, value=0.5)
    w1 = p.op("where", [0, 1, 2], [3, 4], F32)
    w2 = p.op("where", [0, c, 1], [3, 4], F32)
    w3 = p.op("where", [0, 2, c], [3, 4], F32)
    return p.ret(w1, w2, w3), lambda k, a, b: (
        torch.where(k, a, b), torch.where(k, 0.5, a),
        torch.where(k, b.expand(3, 4), torch.full((3, 4), 0.5)))


@case("to")
def _():
    p = Program(([3, 4], F32), ([5], I64))
    h = p.op("to", [0], [3, 4], F16)
    i = p.op("to", [0], [3, 4], I64)
    f = p.op("to", [1], [5], F32)
    b = p.op("to", [1], [5], B)
    return p.ret(h, i, f, b), lambda x, y: (x.half(), x.long(), y.float(), y != 0)


@case("views")
def _():
    p = Program(([2, 3, 4], F32), ([3, 1], F32))
    t = p.op("permute", [0], [4, 2, 3], F32, dims=[2, 0, 1])
    r = p.op("reshape", [t], [8, 3], F32)
    e = p.op("expand", [1], [2, 3, 5], F32)
    return p.ret(r, e), lambda x, y: (
        x.permute(2, 0, 1).contiguous().view(8, 3), y.unsqueeze(0).repeat(2, 1, 5))


@case("reductions")
def _():
    p = Program(([2, 3, 4], F32))
    s = p.op("sum", [0], [3], F32, dims=[0, 2])
    mx = p.op("amax", [0], [2, 4], F32, dims=[1])
    mn = p.op("amin", [0], [4], F32, dims=[0, 1])
    pr = p.op("prod", [0], [3], F32, dims=[0, 2])
    return p.ret(s, mx, mn, pr), lambda x: (
        x.sum(dim=(0, 2)), x.max(dim=1).values, x.reshape(6, 4).min(dim=0).values,
        x.permute(1, 0, 2).reshape(3, 8).prod(dim=1))


@case("compound activations")
def _():
    p = Program(([3, 40], F32))
    outs = [p.op(fn, [0], [3, 40], F32) for fn in
            ("silu", "gelu", "gelu_tanh", "mish", "hardsigmoid", "hardswish")]
    outs.append(p.op("softplus", [0], [3, 40], F32, value=20.0))
    outs.append(p.op("softplus", [0], [3, 40], F32, value=1.5))
    sqrt_2_over_pi = (2 / torch.pi) ** 0.5

    def softplus(x, threshold):
        return torch.where(x > threshold, x, torch.log(1 + torch.exp(x.double())).float())

    return p.ret(*outs), lambda x: (
        x / (1 + torch.exp(-x)),
        0.5 * x * (1 + torch.erf(x / 2 ** 0.5)),
        0.5 * x * (1 + torch.tanh(sqrt_2_over_pi * (x + 0.044715 * x ** 3))),
        x * torch.tanh(softplus(x, 20.0)),
        torch.clamp(x + 3, 0, 6) / 6,
        x * torch.clamp(x + 3, 0, 6) / 6,
        softplus(x, 20.0),
        softplus(x, 1.5))


@case("cumulative sums and products")
def _():
    p = Program(([3, 6], F32), ([4, 5], "int32"))
    total = p.op("cumsum", [0], [3, 6], F32, dim=[1])
    product = p.op("cumprod", [0], [3, 6], F32, dim=[0])
    counts = p.op("cumsum", [1], [4, 5], "int32", dim=[1])

    def running(x, dim, step):
        # Element by element, in float64 (int64 for integers).
        wide = x.double() if x.is_floating_point() else x.long()
        out = wide.clone()
        for i in range(1, x.shape[dim]):
            out.select(dim, i).copy_(step(out.select(dim, i - 1), wide.select(dim, i)))
        return out

    return p.ret(total, product, counts), lambda x, n: (
        running(x, 1, lambda a, b: a + b).float(),
        running(x, 0, lambda a, b: a * b).float(),
        running(n, 1, lambda a, b: a + b).int())


@case("index_put")
def _():
    # Rows by one index column (overwrite), single elements by two
    # (accumulate, with a repeated position).
    p = Program(([5, 3], F32), ([3, 1], I64), ([3, 3], F32), ([4, 2], I64), ([4], F32))
    rows = p.op("index_put", [0, 1, 2], [5, 3], F32, accumulate=[0])
    points = p.op("index_put", [0, 3, 4], [5, 3], F32, accumulate=[1])

    def put(x, at, values, accumulate):
        out = x.clone()
        for n in range(at.shape[0]):
            place = tuple(int(v) for v in at[n])
            out[place] = out[place] + values[n] if accumulate else values[n]
        return out

    return p.ret(rows, points), lambda x, r, v, q, w: (put(x, r, v, False), put(x, q, w, True))


@case("compound row functions")
def _():
    p = Program(([2, 5, 8], F32))
    sm = p.op("softmax", [0], [2, 5, 8], F32, dim=[1])
    lsm = p.op("log_softmax", [0], [2, 5, 8], F32, dim=[2])
    lse = p.op("logsumexp", [0], [2], F32, dims=[1, 2])

    def shifted(x, dims):
        return x - x.amax(dim=dims, keepdim=True)

    return p.ret(sm, lsm, lse), lambda x: (
        shifted(x, 1).exp() / shifted(x, 1).exp().sum(dim=1, keepdim=True),
        shifted(x, 2) - shifted(x, 2).exp().sum(dim=2, keepdim=True).log(),
        shifted(x, (1, 2)).exp().sum(dim=(1, 2)).log() + x.amax(dim=(1, 2)))


@case("norms")
def _():
    p = Program(([4, 3, 6], F32), ([3, 6], F32), ([3, 6], F32), ([6], F32))
    full = p.op("layer_norm", [0, 1, 2], [4, 3, 6], F32, value=1e-5, normalized=[2],
                affine=[1, 1])
    bare = p.op("layer_norm", [0], [4, 3, 6], F32, value=1e-3, normalized=[1], affine=[0, 0])
    rms = p.op("rms_norm", [0, 3], [4, 3, 6], F32, value=1e-6, normalized=[1], affine=[1, 0])

    def normalized(x, dims, eps):
        mean = x.mean(dim=dims, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=dims, keepdim=True)
        return (x - mean) / torch.sqrt(var + eps)

    return p.ret(full, bare, rms), lambda x, w, b, g: (
        normalized(x, (1, 2), 1e-5) * w + b,
        normalized(x, 2, 1e-3),
        x / torch.sqrt((x * x).mean(dim=2, keepdim=True) + 1e-6) * g)


@case("matmul")
def _():
    p = Program(([4, 6], F32), ([6, 5], F32), ([3, 4, 6], F32), ([3, 6, 2], F32))
    m = p.op("matmul", [0, 1], [4, 5], F32)
    b = p.op("matmul", [2, 3], [3, 4, 2], F32)
    return p.ret(m, b), lambda a, w, x, y: (a @ w, torch.bmm(x, y))


@case("conv")
def _():
    p = Program(([2, 4, 11], F32), ([6, 2, 3], F32),
                ([1, 4, 9, 8], F32), ([4, 1, 3, 3], F32),
                ([1, 2, 5, 6, 5], F32), ([3, 2, 2, 3, 2], F32))
    c1 = p.op("conv", [0, 1], [2, 6, 5], F32,
              stride=[2], padding=[1], dilation=[2], groups=[2])
    c2 = p.op("conv", [2, 3], [1, 4, 5, 8], F32,
              stride=[2, 1], padding=[1, 1], dilation=[1, 1], groups=[4])
    c3 = p.op("conv", [4, 5], [1, 3, 4, 4, 4], F32,
              stride=[1, 1, 1], padding=[0, 0, 0], dilation=[1, 1, 1], groups=[1])
    return p.ret(c1, c2, c3), lambda x1, w1, x2, w2, x3, w3: (
        torch.conv1d(x1, w1, stride=2, padding=1, dilation=2, groups=2),
        torch.conv2d(x2, w2, stride=(2, 1), padding=1, groups=4),
        torch.conv3d(x3, w3))


def _sum_windows(x, kernel, stride, padding):
    # Sliding-window sums by unfold, independent of avg_pool.
    spatial = len(kernel)
    pads = [p for q in reversed(padding) for p in (q, q)]
    x = F.pad(x, pads)
    for d in range(spatial):
        x = x.unfold(2 + d, kernel[d], stride[d])
    return x.sum(dim=tuple(range(-spatial, 0)))


def _max_windows(x, kernel, stride, padding, dilation):
    spatial = len(kernel)
    pads = [p for q in reversed(padding) for p in (q, q)]
    x = F.pad(x, pads, value=float("-inf"))
    for d in range(spatial):
        span = dilation[d] * (kernel[d] - 1) + 1
        x = x.unfold(2 + d, span, stride[d])
    index = tuple([...] + [slice(None, None, dl) for dl in dilation])
    return x[index].amax(dim=tuple(range(-spatial, 0)))


@case("pools")
def _():
    p = Program(([2, 3, 10], F32), ([1, 2, 7, 9], F32), ([1, 2, 4, 5, 6], F32))
    m1 = p.op("max_pool", [0], [2, 3, 4], F32,
              kernel=[3], stride=[2], padding=[1], dilation=[2])
    m2 = p.op("max_pool", [1], [1, 2, 4, 4], F32,
              kernel=[3, 2], stride=[2, 2], padding=[1, 0], dilation=[1, 1])
    s1 = p.op("sum_pool", [0], [2, 3, 5], F32, kernel=[3], stride=[2], padding=[1])
    s2 = p.op("sum_pool", [1], [1, 2, 4, 5], F32, kernel=[2, 3], stride=[2, 2], padding=[1, 1])
    s3 = p.op("sum_pool", [2], [1, 2, 3, 4, 5], F32,
              kernel=[2, 2, 2], stride=[1, 1, 1], padding=[0, 0, 0])
    return p.ret(m1, m2, s1, s2, s3), lambda x1, x2, x3: (
        _max_windows(x1, [3], [2], [1], [2]), _max_windows(x2, [3, 2], [2, 2], [1, 0], [1, 1]),
        _sum_windows(x1, [3], [2], [1]), _sum_windows(x2, [2, 3], [2, 2], [1, 1]),
        _sum_windows(x3, [2, 2, 2], [1, 1, 1], [0, 0, 0]))


@case("pad")
def _():
    p = Program(([2, 3, 4], F32), ([3], I64))
    a = p.op("pad", [0], [3, 3, 7], F32, value=-2.0, low=[1, 0, 2], high=[0, 0, 1])
    b = p.op("pad", [1], [6], I64, value=4, low=[2], high=[1])
    def ref(x, y):
        out = torch.full((3, 3, 7), -2.0)
        out[1:, :, 2:6] = x
        return out, torch.cat([torch.tensor([4, 4]), y, torch.tensor([4])])
    return p.ret(a, b), ref


@case("slices")
def _():
    p = Program(([6, 7, 4], F32), ([2, 3], F32))
    s = p.op("slice", [0], [2, 3, 4], F32, offsets=[1, 0, 0], sizes=[2, 3, 4], strides=[3, 2, 1])
    i = p.op("insert_slice", [1, 0], [6, 7, 4], F32,
             offsets=[2, 1, 3], sizes=[2, 3, 1], strides=[1, 2, 1])
    def ref(x, y):
        out = x.clone()
        for a in range(2):
            for b in range(3):
                out[2 + a, 1 + 2 * b, 3] = y[a, b]
        return x[[1, 4]][:, [0, 2, 4]], out
    return p.ret(s, i), ref


@case("cat")
def _():
    p = Program(([2, 3], F32), ([2, 1], F32), ([2, 4], F32))
    return p.ret(p.op("cat", [0, 1, 2], [2, 8], F32, dim=[1])), lambda a, b, c: torch.hstack(
        [a, b, c])


@case("float16-chain", positive=True)
def _():
    p = Program(([4, 8], F16), ([8], F16))
    a = p.op("add", [0, 1], [4, 8], F16)
    e = p.op("exp", [a], [4, 8], F16)
    s = p.op("sum", [e], [4], F16, dims=[1])
    return p.ret(s), lambda x, y: torch.exp(x + y).sum(dim=1)


@case("int64-chain")
def _():
    p = Program(([5, 3], I64), ([3], I64))
    c = p.op("scalar", [], [], I64, value=4)
    a = p.op("mul", [0, c], [5, 3], I64)
    r = p.op("remainder", [a, 1], [5, 3], I64)
    m = p.op("amax", [a], [3], I64, dims=[0])
    s = p.op("sum", [0], [5], I64, dims=[1])
    def ref(x, y):
        safe = torch.where(y == 0, torch.ones_like(y), y)
        return torch.fmod(x * 4, safe), (x * 4).max(dim=0).values, x.sum(dim=1)
    return p.ret(r, m, s), ref


@case("inverse and hyperbolic functions")
def _():
    # Each inside its domain: sigmoid(x) is in (0, 1), 1 + exp(x) above 1.
    p = Program(([3, 5], F32))
    unit = p.op("sigmoid", [0], [3, 5], F32)
    above_one = p.op("add", [p.op("exp", [0], [3, 5], F32),
                             p.op("scalar", [], [], F32, value=1.0)], [3, 5], F32)
    outs = [p.op(fn, [unit], [3, 5], F32) for fn in ("asin", "acos", "atanh")]
    outs += [p.op(fn, [0], [3, 5], F32) for fn in ("atan", "sinh", "cosh", "asinh")]
    outs += [p.op(fn, [above_one], [3, 5], F32) for fn in ("acosh", "log2", "log10")]

    def ref(x):
        u, w = 1 / (1 + torch.exp(-x)), torch.exp(x) + 1
        return (torch.asin(u), torch.acos(u), 0.5 * torch.log((1 + u) / (1 - u)),
                torch.atan(x), (torch.exp(x) - torch.exp(-x)) / 2,
                (torch.exp(x) + torch.exp(-x)) / 2, torch.log(x + torch.sqrt(x * x + 1)),
                torch.log(w + torch.sqrt(w * w - 1)), torch.log(w) / torch.log(torch.tensor(2.0)),
                torch.log(w) / torch.log(torch.tensor(10.0)))
    return p.ret(*outs), ref


@case("parametrized activations")
def _():
    p = Program(([3, 40], F32))
    outs = [p.op("leaky_relu", [0], [3, 40], F32, value=0.2),
            p.op("elu", [0], [3, 40], F32, value=1.0),
            p.op("elu", [0], [3, 40], F32, value=0.5),
            p.op("celu", [0], [3, 40], F32, value=2.0),
            p.op("selu", [0], [3, 40], F32),
            p.op("relu6", [0], [3, 40], F32),
            p.op("logsigmoid", [0], [3, 40], F32)]
    alpha, scale = 1.6732632423543772, 1.0507009873554805

    def ref(x):
        neg = x < 0
        return (torch.where(neg, 0.2 * x, x), torch.where(neg, torch.exp(x) - 1, x),
                torch.where(neg, 0.5 * (torch.exp(x) - 1), x),
                torch.where(neg, 2.0 * (torch.exp(x / 2.0) - 1), x),
                scale * torch.where(neg, alpha * (torch.exp(x) - 1), x),
                x.clamp(0, 6), -torch.log(1 + torch.exp(-x.double())).float())
    return p.ret(*outs), ref


@case("shifts")
def _():
    p = Program(([4, 6], I64), ([4, 6], I64))
    amount = p.op("remainder", [1, p.op("scalar", [], [], I64, value=5)], [4, 6], I64)
    shift = p.op("abs", [amount], [4, 6], I64)
    return p.ret(p.op("shift_left", [0, shift], [4, 6], I64),
                 p.op("shift_right", [0, shift], [4, 6], I64)), lambda a, b: (
        a * 2 ** torch.fmod(b, 5).abs(), torch.floor_divide(a, 2 ** torch.fmod(b, 5).abs()))


@case("arg reductions and sorts")
def _():
    # Distinct values (a permutation), so that every index is unique.
    p = Program(([4, 6], F32))
    return p.ret(p.op("argmax", [0], [4], I64, dim=[1]), p.op("argmin", [0], [6], I64, dim=[0]),
                 p.op("argsort", [0], [4, 6], I64, dim=[1], descending=[0]),
                 p.op("argsort", [0], [4, 6], I64, dim=[0], descending=[1]),
                 p.op("dim_size", [0], [], I64, dim=[1])), lambda x: (
        torch.tensor([int(max(range(6), key=lambda j: x[i, j])) for i in range(4)]),
        torch.tensor([int(min(range(4), key=lambda i: x[i, j])) for j in range(6)]),
        torch.tensor([sorted(range(6), key=lambda j: float(x[i, j])) for i in range(4)]),
        torch.tensor([sorted(range(4), key=lambda i: -float(x[i, j])) for j in range(6)]).T,
        torch.tensor(6))


@case("index_reduce")
def _():
    # Each row an update names takes the largest of it and its updates.
    p = Program(([5, 2], F32), ([3], I64), ([3, 2], F32))
    wrapped = p.op("remainder", [1, p.op("scalar", [], [], I64, value=5)], [3], I64)
    rows = p.op("abs", [wrapped], [3], I64)
    out = p.op("index_reduce", [0, rows, 2], [5, 2], F32, reduce=[1])

    def ref(x, i, u):
        out = x.clone()
        for k, row in enumerate(torch.fmod(i, 5).abs().tolist()):
            out[row] = torch.maximum(out[row], u[k])
        return out
    return p.ret(out), ref


@case("group_norm")
def _():
    p = Program(([2, 6, 5], F32), ([6], F32), ([6], F32))
    out = p.op("group_norm", [0, 1, 2], [2, 6, 5], F32, value=1e-5, groups=[3])

    def ref(x, w, b):
        g = x.reshape(2, 3, 10).double()
        mean = g.mean(dim=2, keepdim=True)
        var = ((g - mean) ** 2).mean(dim=2, keepdim=True)
        y = ((g - mean) / torch.sqrt(var + 1e-5)).reshape(2, 6, 5)
        return (y * w.double().reshape(1, 6, 1) + b.double().reshape(1, 6, 1)).float()
    return p.ret(out), ref


def _tolerance(t):
    if t.dtype in (torch.float16, torch.bfloat16):
        return dict(rtol=2e-3, atol=2e-3)
    if t.dtype.is_floating_point and DEVICE != "cpu":
        # cuDNN convolutions use TF32 by default, in torch and in ATen alike.
        return dict(rtol=5e-3, atol=5e-3)
    if t.dtype.is_floating_point:
        return dict(rtol=1e-5, atol=1e-5)
    return dict(rtol=0, atol=0)


def _run_executor(tmp_path, program, inputs):
    prog = tmp_path / "prog.json"
    prog.write_text(json.dumps(program.json()))
    torch.save(inputs, tmp_path / "in.pt")
    result = subprocess.run(
        [REFERENCE_RUN, "--program", prog, "--inputs", tmp_path / "in.pt",
         "--outputs", tmp_path / "out.pt", "--device", DEVICE],
        capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return list(torch.load(tmp_path / "out.pt"))


def _run_printer(tmp_path, program, inputs):
    prog = tmp_path / "prog.json"
    prog.write_text(json.dumps(program.json()))
    text = subprocess.run([REFERENCE_RUN, "--program", prog, "--print-python"],
                          capture_output=True, text=True, check=True).stdout
    namespace = {}
    exec(compile(text, "<reference>", "exec"), namespace)
    # get_inputs() must describe the same inputs.
    for made, given in zip(namespace["get_inputs"](), inputs):
        assert made.shape == given.shape and made.dtype == given.dtype
    model = namespace["Model"](*namespace["get_init_inputs"]()).to(DEVICE)
    result = model(*[t.to(DEVICE) for t in inputs])
    result = list(result) if isinstance(result, tuple) else [result]
    for t in result:
        assert t.device.type == DEVICE, "the printed model left a tensor off the device"
    return [t.cpu() for t in result]


@pytest.mark.parametrize("name", sorted(CASES))
def test_backends_agree(tmp_path, name):
    build, positive = CASES[name]
    program, reference = build()
    inputs = random_inputs(program, positive, seed=len(name))
    if name in ("binary", "int64-chain", "integer-division"):
        # fmod by zero differs between integer kernels; keep divisors non-zero.
        inputs[-1] = torch.where(inputs[-1] == 0, torch.ones_like(inputs[-1]), inputs[-1])
    if name == "index_put":
        # Positions inside the tensor; distinct rows where they overwrite.
        inputs[1] = torch.tensor([[4], [0], [2]])
        inputs[3] = torch.tensor([[1, 2], [4, 0], [1, 2], [0, 1]])
    expected = reference(*inputs)
    expected = list(expected) if isinstance(expected, tuple) else [expected]

    executed = _run_executor(tmp_path, program, inputs)
    printed = _run_printer(tmp_path, program, inputs)
    assert len(executed) == len(printed) == len(expected)
    for i, (e, p, want) in enumerate(zip(executed, printed, expected)):
        declared = program.ops[program.outputs[i] - len(program.inputs)]["type"]
        assert list(e.shape) == declared["shape"] and e.dtype == DTYPES[declared["dtype"]]
        # Same torch calls: bitwise the same.
        torch.testing.assert_close(e, p, rtol=0, atol=0, equal_nan=True)
        torch.testing.assert_close(e, want.to(e.dtype), **_tolerance(e), equal_nan=True)


def test_every_vocabulary_op_is_covered():
    """Every operation of the one table (RefOps.def) is in some case above."""
    covered = {op["fn"] for build, _ in CASES.values() for op in build()[0].ops}
    assert set(reference_ops.load()) - covered == set()


# ---------------------------------------------------------------------------
# Function plans and errors
# ---------------------------------------------------------------------------


def test_function_plan(tmp_path):
    x = torch.randn(4, 16)
    weight = torch.randn(16, 8)
    bias = torch.randn(8)
    linear = Program(([4, 16], F32), ([16, 8], F32), ([8], F32))
    mm = linear.op("matmul", [0, 1], [4, 8], F32)
    linear.ret(linear.op("add", [mm, 2], [4, 8], F32))
    relu = Program(([4, 8], F32))
    zero = relu.op("scalar", [], [], F32, value=0.0)
    relu.ret(relu.op("maximum", [0, zero], [4, 8], F32))
    weight_step = lambda result, t: {
        "kind": "weight", "result": result,
        "type": {"shape": list(t.shape), "dtype": "float32"},
        "data": t.contiguous().numpy().tobytes().hex()}
    plan = {
        "function": "mlp",
        "arguments": [{"shape": [4, 16], "dtype": "float32"}],
        "steps": [
            weight_step(1, weight), weight_step(2, bias),
            {"kind": "program", "args": [0, 1, 2], "results": [3],
             "program": linear.json(), "python": "...", "request": "b679a03703be38d7"},
            {"kind": "program", "args": [3], "results": [4], "program": relu.json()},
        ],
        "outputs": [4, 3],
    }
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    torch.save([x], tmp_path / "in.pt")
    subprocess.run([REFERENCE_RUN, "--plan", tmp_path / "plan.json", "--inputs",
                    tmp_path / "in.pt", "--outputs", tmp_path / "out.pt"], check=True)
    out, hidden = torch.load(tmp_path / "out.pt")
    torch.testing.assert_close(hidden, x @ weight + bias, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out, torch.relu(x @ weight + bias), rtol=1e-5, atol=1e-5)


def _expect_error(tmp_path, document, inputs, *needles, mode="--program"):
    (tmp_path / "doc.json").write_text(document if isinstance(document, str)
                                       else json.dumps(document))
    torch.save(inputs, tmp_path / "in.pt")
    result = subprocess.run([REFERENCE_RUN, mode, tmp_path / "doc.json", "--inputs",
                             tmp_path / "in.pt", "--outputs", tmp_path / "out.pt"],
                            capture_output=True, text=True)
    assert result.returncode == 1, result.stderr
    for needle in needles:
        assert needle in result.stderr, result.stderr


def test_errors(tmp_path):
    p = Program(([2, 3], F32))
    good = p.ret(p.op("exp", [0], [2, 3], F32)).json()
    _expect_error(tmp_path, "{not json", [torch.zeros(2, 3)],
                  "doc.json:1:3: error: syntax error while parsing object key")
    bad_op = json.loads(json.dumps(good))
    bad_op["ops"][0]["fn"] = "frobnicate"
    _expect_error(tmp_path, bad_op, [torch.zeros(2, 3)], "ops[0].fn",
                  "unknown operation 'frobnicate'")
    _expect_error(tmp_path, good, [torch.zeros(3, 2)], "input 0", "[3, 2]", "[2, 3]")
    _expect_error(tmp_path, good, [torch.zeros(2, 3, dtype=torch.int64)], "input 0", "int64")
    wrong_type = json.loads(json.dumps(good))
    wrong_type["ops"][0]["type"]["shape"] = [6]
    _expect_error(tmp_path, wrong_type, [torch.zeros(2, 3)], "op 0 ('exp')", "declares")
    mm = Program(([2, 3], F32), ([2, 3], F32))
    mm.ret(mm.op("matmul", [0, 1], [2, 2], F32))
    _expect_error(tmp_path, mm.json(), [torch.zeros(2, 3)] * 2, "op 0 ('matmul')")
    plan = {"arguments": [{"shape": [2, 3], "dtype": "float32"}],
            "steps": [{"kind": "program", "args": [0], "results": [1], "program": good,
                       "request": "abc"},
                      {"kind": "weight", "result": 2,
                       "type": {"shape": [2], "dtype": "float32"}, "data": "00"}],
            "outputs": [1]}
    _expect_error(tmp_path, plan, [torch.zeros(2, 3)], "step 1 (weight 2)", "bytes",
                  mode="--plan")
    plan["steps"][0]["program"] = bad_op
    _expect_error(tmp_path, plan, [torch.zeros(2, 3)],
                  "steps[0].program.ops[0].fn: unknown operation 'frobnicate'", mode="--plan")
