"""The reduction grammar: an elementwise prologue (0-2 productions) on a
full-shape value, one reduction over any dims (sum, mean, amax, amin,
prod, logsumexp, var, std, argmax, argmin, the L1 or L2 norm, any, all),
keepdim or not, and an
elementwise epilogue (0-2 productions) on the result, which with keepdim
may combine with the full-shape value again (`x - x.amax(-1, keepdim=True)`)
or be reduced again over its own dims (`x.pow(2).sum(-1).sqrt().amax()`);
or a loss (dice.engine.losses).

Each reduction is written as the compiler renders it: `mean` a sum and a
division by the count, `var`/`std` the float64 two-pass decomposition, a
norm `abs`, `pow`, `sum`, `pow`, `any`/`all` a float64 comparison and a
boolean reduction cast back, a keepdim a reshape right after the reducing
op."""

import math
import random

from dice.engine.elementwise import Grammar, _compare_scalar, _scalar_op
from dice.engine.losses import LOSSES, LossGrammar
from dice.engine.program import FLOATS, ProgramBuilder, holds_exactly
from dice.engine.shapes import draw_shape

REDUCTIONS = ("sum", "mean", "amax", "amin", "prod", "logsumexp", "var", "std", "argmax",
              "argmin", "norm", "any", "all")
LOSS_SHARE = 0.25
# Reductions whose result is reduced again, over its own dims.
SECOND_SHARE = 0.25
SECOND_EXCLUDED = ("var", "std", "argmax", "argmin", "any", "all")
# The thresholds `(x > t).any()` and `(x < -t).all()` compare with: an
# extreme one makes a long row's answer depend on the values, not always
# true.
THRESHOLDS = (0.0, 1.0, 2.0, 3.0)


# Reductions over several dims at once (the others take one).
MULTI_DIM = ("sum", "mean", "var", "std", "norm")


class ReductionGrammar(LossGrammar, Grammar):
    def __init__(self, rng, exclude=()):
        super().__init__(rng, exclude)
        self.reductions = [r for r in REDUCTIONS if r not in exclude]
        self.losses = [loss for loss in LOSSES if loss not in exclude]

    def draw_dims(self, shape, kind):
        rng = self.rng
        candidates = [d for d, s in enumerate(shape) if s > 1]
        if kind in MULTI_DIM and len(candidates) > 1 and rng.random() < 0.35:
            return sorted(rng.sample(candidates, rng.randint(2, len(candidates))))
        return [rng.choice(candidates)]

    def reduce(self, b, kind, v, dims, keepdim):
        """The reduction as the compiler renders it; a keepdim reshape
        follows the reducing op (and precedes mean's and var's division)."""
        extent = math.prod(v.shape[d] for d in dims)
        keep = tuple(1 if d in dims else s for d, s in enumerate(v.shape))

        def kept(r):
            return b.reshape(r, keep) if keepdim else r

        if kind in ("argmax", "argmin"):
            return kept(b.reduce(kind, v, dims, lo=0, hi=extent))
        if kind in ("amax", "amin"):
            return kept(b.reduce(kind, v, dims, lo=v.lo, hi=v.hi))
        if kind == "norm":  # torch.linalg.vector_norm(v, p, dims): |v|^p summed, ^(1/p)
            # An integral exponent is an int64 scalar, as the compiler renders it.
            p = self.rng.choice((1, 2))
            powered = b.op("pow", [b.op("abs", [v], lo=0, hi=v.bound), b.scalar(p, "int64")],
                           lo=0, hi=v.bound ** p)
            total = kept(b.reduce("sum", powered, dims, lo=0, hi=extent * v.bound ** p))
            root = b.scalar(1, "int64") if p == 1 else b.scalar(0.5, v.dtype)
            return b.op("pow", [total, root], lo=0, hi=extent * v.bound)
        if kind in ("any", "all"):  # (v > t).any(dims), (v < -t).all(dims), as floats
            t = self.rng.choice(THRESHOLDS)
            test = _compare_scalar(b, "gt" if kind == "any" else "lt", v,
                                   t if kind == "any" else -t)
            found = kept(b.reduce("amax" if kind == "any" else "amin", test, dims, lo=0, hi=1))
            return b.op("to", [found], dtype=v.dtype, lo=0, hi=1)
        if kind == "prod":
            return kept(b.reduce(kind, v, dims, lo=-v.bound ** extent, hi=v.bound ** extent))
        if kind in ("sum", "mean"):
            total = kept(b.reduce("sum", v, dims, lo=-v.bound * extent, hi=v.bound * extent))
            if kind == "sum":
                return total
            return b.op("div", [total, b.scalar(float(extent), v.dtype)], lo=v.lo, hi=v.hi)
        # var, std: unbiased, in float64
        wide = b.op("to", [v], dtype="float64", lo=v.lo, hi=v.hi)
        total = b.reshape(b.reduce("sum", wide, dims), keep)
        mean = b.op("div", [total, b.scalar(float(extent), "float64")])
        dev = b.op("sub", [wide, mean])
        square_sum = kept(b.reduce("sum", b.op("mul", [dev, dev]), dims))
        var = b.op("div", [square_sum, b.scalar(float(extent - 1), "float64")])
        out = b.op("to", [var], dtype=v.dtype, lo=0, hi=v.bound ** 2)
        if kind == "std":
            out = b.op("sqrt", [out], lo=0, hi=v.bound)
        return out

    def guard(self, b, kind, v, extent):
        """Keep the reduction's result finite: a product of values near 1,
        a half-precision sum of values small enough."""
        if kind == "prod":
            self.used.append("tanh")
            v = _scalar_op(b, "mul", b.op("tanh", [v], lo=-1, hi=1), 0.25, lo=-0.25, hi=0.25)
            return _scalar_op(b, "add", v, 1.0, lo=0.75, hi=1.25)
        if kind in ("sum", "logsumexp") and v.dtype in ("float16", "bfloat16"):
            return self.squash(b, v, 30000.0 / extent if kind == "sum" else 8.0)
        if kind == "norm" and v.dtype in ("float16", "bfloat16"):  # a sum of squares
            return self.squash(b, v, (30000.0 / extent) ** 0.5)
        return self.squash(b, v, self.limit(v))

    def draw(self, size=None):
        rng = self.rng
        self.used = []
        if self.losses and rng.random() < LOSS_SHARE:
            return self.draw_loss()
        kind = rng.choice(self.reductions)
        self.dtype = self.compute_dtype = rng.choice(FLOATS + ("float32",))
        for _ in range(100):
            shape = draw_shape(rng)
            if any(s > 1 for s in shape):
                break
        self.shape = shape
        dims = self.draw_dims(shape, kind)
        extent = math.prod(shape[d] for d in dims)
        limit = 64 if self.dtype == "float32" else 32
        if kind == "prod" and extent > limit:
            kind = "sum"
        if kind in ("var", "std") and extent < 3:  # a division by n - 1 = 1 folds away
            kind = "mean"
        if kind == "mean" and not holds_exactly(float(extent), self.dtype):
            kind = "sum"
        keepdim = len(shape) > len(dims) and rng.random() < 0.5
        b = ProgramBuilder()
        v = self.new_input(b, shape)
        pool = [v]
        for _ in range(rng.choice((0, 1, 1, 2))):
            v = self.unary(b, v) if rng.random() < 0.5 else self.binary(b, v, pool)
            pool.append(v)
        v = self.guard(b, kind, v, extent)
        self.used.append(kind)
        r = self.reduce(b, kind, v, dims, keepdim)
        if kind not in ("argmax", "argmin"):
            self.shape = r.shape
            reduced = [r]
            for _ in range(rng.choice((0, 0, 1, 2))):
                r = self.unary(b, r) if rng.random() < 0.6 else self.binary(b, r, reduced)
                reduced.append(r)
            if any(s > 1 for s in r.shape) and rng.random() < SECOND_SHARE:
                r = self.second_reduction(b, r)
            elif keepdim and rng.random() < 0.5:
                r = self.broadcast_back(b, v, r)
        return b.build([r]), [u for u in self.used if u != "scale"]

    def second_reduction(self, b, r):
        """A reduction of the first one's result over its own dims (a row's
        norm, then the largest over the batch), and 0-1 productions after."""
        rng = self.rng
        # Not an argmax: a rounded sum ties where PyTorch's order of adding breaks
        # the tie otherwise.
        kind = rng.choice([k for k in self.reductions if k not in SECOND_EXCLUDED] or ["sum"])
        dims = self.draw_dims(r.shape, kind)
        extent = math.prod(r.shape[d] for d in dims)
        if kind == "prod" and extent > 16:
            kind = "sum"
        if kind == "mean" and not holds_exactly(float(extent), r.dtype):
            kind = "sum"
        v = self.guard(b, kind, r, extent)
        self.used.append(kind)
        r = self.reduce(b, kind, v, dims, keepdim=False)
        if kind not in ("argmax", "argmin") and rng.random() < 0.4:
            self.shape = r.shape
            r = self.unary(b, r)
        return r

    def broadcast_back(self, b, v, r):
        """The full-shape value combined with the kept result: x - max,
        x * scale, x / (|sum| + 1)."""
        op = self.rng.choice(("sub", "mul", "div"))
        self.used.append("broadcast_back")
        limit = self.limit(v)
        v, r = self.squash(b, v, limit ** 0.5), self.squash(b, r, limit ** 0.5)
        if op == "div":
            den = _scalar_op(b, "add", b.op("abs", [r], lo=0, hi=r.bound), 1.0,
                             lo=1, hi=r.bound + 1)
            return b.op("div", [v, den], lo=-v.bound, hi=v.bound)
        bound = v.bound + r.bound if op == "sub" else v.bound * r.bound
        return b.op(op, [v, r], lo=-bound, hi=bound)


def draw_reduction(seed):
    """One program from a fresh grammar (for tests and examples)."""
    return ReductionGrammar(random.Random(seed)).draw()
