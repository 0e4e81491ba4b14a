"""The catalogue: every task family, and the task variants (shapes, dtypes,
constants) drawn for it from a seeded random generator.

A Spec is one task: its family, level (1 single op, 2 fusion), the
KernelBench-format PyTorch program, and `solve(signature)`, the CUDA
source answering it for the request's `dice_forward` signature."""

import random
from dataclasses import dataclass
from typing import Callable

from dice.corpus import elementwise, matmul, rows, spatial
from dice.corpus.elementwise import BINARY, UNARY, Unary

# Families only the held-out split sees (docs/corpus.md, "Splits"): one
# activation of each kind (smooth, piecewise, rational), a row
# normalisation, the min reductions (argmin among them), average pooling
# and chains of the held-out activations, so held-out scores measure
# transfer to ops never trained on.
HELDOUT = frozenset({"mish", "hardswish", "softsign", "log_softmax", "reduce_amin",
                     "reduce_min", "reduce_argmin", "avg_pool2d", "chain_heldout_ops"})


@dataclass(frozen=True)
class Spec:
    family: str
    level: int
    pytorch_code: str
    solve: Callable[[str], str]


def program_text(doc, params, expr, inputs):
    """A KernelBench-format program: `forward(params)` returns `expr`;
    inputs are (shape, dtype) pairs drawn with torch.randn."""
    tensors = ", ".join(f"torch.randn({', '.join(map(str, shape))}, dtype=torch.{dtype})"
                        for shape, dtype in inputs)
    return f'''import torch
import torch.nn as nn


class Model(nn.Module):
    """{doc}"""

    def __init__(self):
        super().__init__()

    def forward(self, {", ".join(params)}):
        return {expr}


def get_inputs():
    return [{tensors}]


def get_init_inputs():
    return []
'''


def shape_text(shape):
    return "[" + ", ".join(map(str, shape)) + "]"


def draw_dtype(rng, k, low_precision_every=3):
    """Mostly fp32: every `low_precision_every`-th variant fp16 or bf16."""
    if k % low_precision_every == low_precision_every - 1:
        return rng.choice(["float16", "bfloat16"])
    return "float32"


ELEMENTWISE_SHAPES = [(64, 256), (128, 1024), (32, 4096), (16, 64, 128), (37, 129),
                      (256, 512), (8, 3, 1000), (1000,), (4, 32, 33), (512, 384)]
ROW_SHAPES = [(64, 256), (128, 1024), (32, 4096), (16, 8, 512), (100, 129), (256, 2048),
              (8, 30), (1024, 64), (4, 16, 1000)]


def distinct(rng, options, count):
    """`count` draws from `options`, no repeats until all are used, so the
    variants of a family are different requests."""
    drawn = []
    while len(drawn) < count:
        drawn += rng.sample(options, min(len(options), count - len(drawn)))
    return drawn


def unary_specs(rng, variants):
    for name, op in UNARY.items():
        for k, shape in enumerate(distinct(rng, ELEMENTWISE_SHAPES, variants)):
            dtype = draw_dtype(rng, k)
            code = program_text(f"{name} of a {shape_text(shape)} {dtype} tensor", ["x"],
                                op.torch.format(x="x"), [(shape, dtype)])

            def solve(signature, name=name, op=op, dtype=dtype, shape=shape):
                return elementwise.elementwise_source(
                    name, f"{name}(x), elementwise, computed in float.", [op.cuda], signature,
                    dtype, None, shape[-1])
            yield Spec(name, 1, code, solve)


def binary_specs(rng):
    for name, (torch_expr, cuda) in BINARY.items():
        for broadcast in elementwise.BROADCASTS:
            shape = rng.choice([(64, 256), (128, 1024), (100, 129), (256, 512), (32, 4096)])
            # Division stays in fp32: low precision overflows near zero divisors.
            dtype = "float32" if name == "div" or broadcast != "row" else \
                rng.choice(["float16", "float32"])
            second = {"full": shape, "row": shape[-1:], "col": (shape[0], 1)}[broadcast]
            code = program_text(
                f"{name} of a {shape_text(shape)} tensor and "
                f"{elementwise.BROADCASTS[broadcast][0]} ({dtype})", ["x", "y"],
                torch_expr.format(x="x", y="y"), [(shape, dtype), (second, dtype)])

            def solve(signature, name=name, cuda=cuda, dtype=dtype, shape=shape,
                      broadcast=broadcast):
                return elementwise.elementwise_source(
                    f"{name}_{broadcast}", f"{name}(x, y), y {elementwise.BROADCASTS[broadcast][0]}"
                    ", elementwise.", [cuda], signature, dtype, broadcast, shape[-1])
            yield Spec(f"binary_{name}", 1, code, solve)


def chain_step(rng, unaries, allow_operand):
    """One step of a chain: (PyTorch template of {x}, C statement, whether
    it reads the second input y, a label for the description)."""
    kind = rng.choice(["unary", "unary", "scale", "shift"] + (["bias"] if allow_operand else []))
    if kind == "unary":
        name = rng.choice(unaries)
        return UNARY[name].torch, UNARY[name].cuda, False, name
    if kind == "scale":
        c = rng.choice([0.5, 2.0, 1.5, -1.0, 0.125])
        return f"{{x}} * {c}", f"v = v * {c!r}f;", False, "scale"
    if kind == "shift":
        c = rng.choice([1.0, -0.5, 0.25, 3.0])
        return f"{{x}} + {c}", f"v = v + {c!r}f;", False, "shift"
    op = rng.choice(["add", "mul", "sub"])
    torch_expr, cuda = BINARY[op]
    return torch_expr.replace("{y}", "y"), cuda, True, f"bias_{op}"


def chain_specs(rng, count, unaries, family):
    for k in range(count):
        length = rng.randint(2, 4)
        steps, uses_y = [], False
        while len(steps) < length:
            step = chain_step(rng, unaries, allow_operand=not uses_y)
            uses_y |= step[2]
            steps.append(step)
        if not any(step[3] in UNARY for step in steps):
            # A chain holds at least one function of its family's unaries.
            name = rng.choice(unaries)
            steps[-1] = (UNARY[name].torch, UNARY[name].cuda, False, name)
            uses_y = any(step[2] for step in steps)
        expr = "x"
        for torch_t, _, _, label in steps:
            # Infix steps parenthesise an infix expression they extend.
            infix = expr != "x" and not (expr.startswith("torch.") and expr.endswith(")"))
            inner = f"({expr})" if infix and label not in UNARY else expr
            expr = torch_t.replace("{x}", inner)
        shape = rng.choice(ELEMENTWISE_SHAPES[:6] + [(64, 256)])
        dtype = draw_dtype(rng, k, low_precision_every=4)
        broadcast = rng.choice(["row", "col"]) if uses_y and len(shape) == 2 else \
            ("row" if uses_y else None)
        inputs = [(shape, dtype)]
        params = ["x"]
        if uses_y:
            inputs.append((shape[-1:] if broadcast == "row" else (shape[0], 1), dtype))
            params.append("y")
        names = " -> ".join(s[3] for s in steps)
        code = program_text(f"{names} on a {shape_text(shape)} {dtype} tensor", params, expr,
                            inputs)
        statements = [s[1] for s in steps]

        def solve(signature, statements=statements, dtype=dtype, shape=shape,
                  broadcast=broadcast, names=names):
            return elementwise.elementwise_source(
                "fused_chain", f"Fused elementwise chain: {names}; one pass, computed in float.",
                statements, signature, dtype, broadcast, shape[-1])
        yield Spec(family, 2, code, solve)


# name -> PyTorch expression of x over the last dimension.
REDUCTION_EXPRS = {
    "sum": "torch.sum(x, dim=-1)", "mean": "torch.mean(x, dim=-1)",
    "amax": "torch.amax(x, dim=-1)", "max": "torch.max(x, dim=-1).values",
    "amin": "torch.amin(x, dim=-1)", "min": "torch.min(x, dim=-1).values",
    "prod": "torch.prod(x, dim=-1)", "l2_norm": "torch.linalg.vector_norm(x, dim=-1)",
    "sum_squares": "torch.sum(x * x, dim=-1)",
}


def row_specs(rng, variants):
    def shapes(fp32_only=False):
        """(shape, dtype) per variant: distinct shapes, mostly fp32."""
        return [(shape, "float32" if fp32_only else draw_dtype(rng, k))
                for k, shape in enumerate(distinct(rng, ROW_SHAPES, variants))]

    for op, expr in REDUCTION_EXPRS.items():
        # Short rows of fp32 for prod: a product of many normal draws underflows.
        variant_shapes = [(s, "float32") for s in
                          distinct(rng, [(64, 16), (128, 24), (32, 8, 12)], variants)] \
            if op == "prod" else shapes()
        for shape, dtype in variant_shapes:
            code = program_text(f"{op} over the last dimension of a {shape_text(shape)} {dtype} "
                                "tensor", ["x"], expr, [(shape, dtype)])
            level = 2 if op == "sum_squares" else 1
            yield Spec(f"reduce_{op}", level, code,
                       lambda sig, op=op, dtype=dtype, shape=shape:
                       rows.reduction_source(op, sig, dtype, shape[-1]))
    for op in ("var", "std"):
        for shape, dtype in shapes():
            code = program_text(f"{op} over the last dimension of a {shape_text(shape)} {dtype} "
                                "tensor", ["x"], f"torch.{op}(x, dim=-1)", [(shape, dtype)])
            yield Spec(f"reduce_{op}", 1, code, lambda sig, op=op, dtype=dtype, shape=shape:
                       rows.variance_source(op, sig, dtype, shape[-1]))
    for shape, dtype in shapes(fp32_only=True):
        code = program_text(f"logsumexp over the last dimension of a {shape_text(shape)} tensor",
                            ["x"], "torch.logsumexp(x, dim=-1)", [(shape, dtype)])
        yield Spec("logsumexp", 1, code, lambda sig, dtype=dtype, shape=shape:
                   rows.logsumexp_source(sig, dtype, shape[-1]))
    for op in ("argmax", "argmin"):
        for shape, dtype in shapes():
            code = program_text(f"{op} over the last dimension of a {shape_text(shape)} {dtype} "
                                "tensor", ["x"], f"torch.{op}(x, dim=-1)", [(shape, dtype)])
            yield Spec(f"reduce_{op}", 1, code, lambda sig, op=op, dtype=dtype, shape=shape:
                       rows.arg_reduction_source(op, sig, dtype, shape[-1]))
    for op in ("softmax", "log_softmax"):
        for shape, dtype in shapes():
            code = program_text(f"{op} over the last dimension of a {shape_text(shape)} {dtype} "
                                "tensor", ["x"], f"torch.{op}(x, dim=-1)", [(shape, dtype)])
            yield Spec(op, 1, code, lambda sig, op=op, dtype=dtype, shape=shape:
                       rows.softmax_source(op, sig, dtype, shape[-1]))
    for shape, dtype in shapes():
        eps = rng.choice([1e-5, 1e-6])
        n = shape[-1]
        code = program_text(
            f"layer norm over the last dimension of a {shape_text(shape)} {dtype} tensor",
            ["x", "weight", "bias"],
            f"torch.nn.functional.layer_norm(x, ({n},), weight, bias, eps={eps})",
            [(shape, dtype), ((n,), dtype), ((n,), dtype)])
        yield Spec("layer_norm", 1, code, lambda sig, dtype=dtype, shape=shape, eps=eps:
                   rows.norm_source("layer_norm", sig, dtype, shape[-1], eps))
    for shape, dtype in shapes():
        eps = rng.choice([1e-5, 1e-6])
        code = program_text(
            f"RMS norm over the last dimension of a {shape_text(shape)} {dtype} tensor",
            ["x", "weight"],
            f"x * torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + {eps}) * weight",
            [(shape, dtype), ((shape[-1],), dtype)])
        yield Spec("rms_norm", 2, code, lambda sig, dtype=dtype, shape=shape, eps=eps:
                   rows.norm_source("rms_norm", sig, dtype, shape[-1], eps))


# The epilogues of GEMM tasks; "none" is the bias alone (a plain linear layer).
GEMM_ACTIVATIONS = {"relu": UNARY["relu"], "gelu_tanh": UNARY["gelu_tanh"],
                    "gelu_erf": UNARY["gelu_erf"], "silu": UNARY["silu"],
                    "sigmoid": UNARY["sigmoid"], "none": Unary("{x}", "")}


def dense_specs(rng, variants):
    for k, (m, kk, n) in enumerate(distinct(
            rng, [(128, 256, 128), (64, 512, 256), (100, 130, 70), (256, 256, 256)], variants)):
        tile = 16 if k % 2 else 32
        code = program_text(f"matmul of [{m}, {kk}] and [{kk}, {n}] float32 matrices",
                            ["a", "b"], "torch.matmul(a, b)",
                            [((m, kk), "float32"), ((kk, n), "float32")])
        yield Spec("matmul", 1, code, lambda sig, tile=tile: matmul.gemm_source(
            sig, "float32", tile, "kn", False, None,
            f"Tiled matmul, {tile} x {tile} shared-memory tiles, float accumulation."))
    # Large and small batches (M): inference runs layers on a few rows.
    gemm_shapes = [(128, 256, 128), (64, 512, 256), (96, 200, 120), (32, 1024, 64),
                   (4, 256, 64), (1, 512, 128), (8, 64, 24), (3, 200, 50)]
    for k, (m, kk, n) in enumerate(distinct(rng, gemm_shapes, 2 * variants)):
        act = rng.choice(sorted(GEMM_ACTIVATIONS))
        layout = "nk" if k % 2 else "kn"
        dtype = "float16" if k == 3 else "float32"
        tile = 16 if dtype == "float16" or k % 3 == 0 else 32
        op = GEMM_ACTIVATIONS[act]
        if layout == "kn":
            expr = op.torch.format(x="torch.matmul(x, w) + b")
            w_shape, what = (kk, n), "x @ w + b"
        else:
            expr = op.torch.format(x="torch.nn.functional.linear(x, w, b)")
            w_shape, what = (n, kk), "linear(x, w, b)"
        what = what if act == "none" else f"{act}({what})"
        code = program_text(f"{what} with x [{m}, {kk}], {dtype}", ["x", "w", "b"], expr,
                            [((m, kk), dtype), (w_shape, dtype), ((n,), dtype)])
        epilogue = "the bias" if act == "none" else "the bias and activation"
        yield Spec("gemm_bias_act", 2, code,
                   lambda sig, dtype=dtype, tile=tile, layout=layout, op=op, what=what,
                   epilogue=epilogue:
                   matmul.gemm_source(sig, dtype, tile, layout, True, op.cuda or None,
                                      f"{what}: tiled GEMM ({tile} x {tile}) with "
                                      f"{epilogue} in its epilogue."))
    for k, (m, n) in enumerate(distinct(rng, [(256, 512), (100, 300), (1024, 64), (33, 65)],
                                        variants)):
        dtype = draw_dtype(rng, k)
        code = program_text(f"transpose of a [{m}, {n}] {dtype} matrix", ["x"],
                            "x.transpose(0, 1).contiguous()", [((m, n), dtype)])
        yield Spec("transpose", 1, code, lambda sig, dtype=dtype:
                   matmul.transpose_source(sig, dtype))


POOL_SHAPES = [(2, 8, 16, 16), (4, 16, 32, 32), (8, 3, 64, 64), (1, 32, 28, 28),
               (16, 64, 14, 14), (2, 4, 17, 19), (32, 8, 8, 8), (4, 24, 12, 30)]


def pool_specs(rng, variants):
    for op in ("max", "avg"):
        for k, shape in enumerate(distinct(rng, POOL_SHAPES, variants)):
            dtype = draw_dtype(rng, k)
            window = rng.choice([2, 2, 3])
            code = program_text(f"{op} pooling ({window} x {window}, stride {window}) of a "
                                f"{shape_text(shape)} {dtype} image batch", ["x"],
                                f"torch.nn.functional.{op}_pool2d(x, {window})",
                                [(shape, dtype)])
            yield Spec(f"{op}_pool2d", 1, code, lambda sig, op=op, dtype=dtype, window=window:
                       spatial.pool2d_source(op, sig, dtype, window))


def catalogue(seed=0, variants=8):
    """Every Spec of the catalogue, in a fixed order for a seed."""
    rng = random.Random(seed)
    train_unaries = sorted(n for n in UNARY if n not in HELDOUT)
    heldout_unaries = sorted(n for n in UNARY if n in HELDOUT)
    yield from unary_specs(rng, variants)
    yield from binary_specs(rng)
    yield from chain_specs(rng, 10 * variants, train_unaries, "chain")
    yield from chain_specs(rng, variants, heldout_unaries, "chain_heldout_ops")
    yield from row_specs(rng, variants)
    yield from dense_specs(rng, variants)
    yield from pool_specs(rng, variants)
