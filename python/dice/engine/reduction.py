"""The reduction grammar: an elementwise prologue (0-2 productions) on a
full-shape value, one reduction over any dims (sum, mean, amax, amin,
prod, logsumexp, var, std, argmax, argmin), keepdim or not, and an
elementwise epilogue (0-2 productions) on the result, which with keepdim
may combine with the full-shape value again (`x - x.amax(-1, keepdim=True)`)
or be reduced again over its own dims (`x.pow(2).sum(-1).sqrt().amax()`);
or a loss of a prediction (after 0-1 productions) against a target
(MSE, L1, smooth L1, Huber, KL divergence, soft margin) over every element,
and an epilogue (0-1 productions) on it.

Each reduction is written as the compiler renders it: `mean` a sum and a
division by the count, `var`/`std` the float64 two-pass decomposition, a
keepdim a reshape right after the reducing op."""

import math
import random
import struct

from dice.engine.elementwise import Grammar, _compare_scalar, _scalar_op
from dice.engine.program import FLOATS, ProgramBuilder
from dice.engine.shapes import draw_shape

REDUCTIONS = ("sum", "mean", "amax", "amin", "prod", "logsumexp", "var", "std", "argmax",
              "argmin")
# Losses of a prediction against a target, each an elementwise term summed
# over every element (reduction "sum"), then divided by the count ("mean")
# or, for kl_div, by the batch ("batchmean").
LOSSES = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div", "soft_margin_loss",
          "cross_entropy")
# Losses whose terms grow too fast for a half-precision sum: float32 only.
FLOAT32_LOSSES = ("kl_div", "soft_margin_loss")
LOSS_SHARE = 0.25
# Reductions whose result is reduced again, over its own dims.
SECOND_SHARE = 0.25
SECOND_EXCLUDED = ("var", "std", "argmax", "argmin")


def holds_exactly(value, dtype):
    """Whether `dtype` holds the number exactly (the compiler renders any
    other constant as a float64 tensor and a cast)."""
    if dtype == "float16":
        return abs(value) <= 65504 and struct.unpack("<e", struct.pack("<e", value))[0] == value
    as_float = struct.unpack("<f", struct.pack("<f", value))[0]
    if dtype == "bfloat16":
        return as_float == value and struct.unpack("<I", struct.pack("<f", value))[0] & 0xFFFF == 0
    return dtype == "float64" or as_float == value


# Reductions over several dims at once (the others take one).
MULTI_DIM = ("sum", "mean", "var", "std")


class ReductionGrammar(Grammar):
    def __init__(self, rng, exclude=()):
        super().__init__(rng, exclude)
        self.reductions = [r for r in REDUCTIONS if r not in exclude]
        self.losses = [loss for loss in LOSSES if loss not in exclude]

    def loss_term(self, b, kind, pred, target):
        """The elementwise term of a loss as the compiler renders
        `F.<kind>(pred, target)`, its constants (beta, delta) drawn; KL
        divergence and soft margin scale their inputs into the range where
        their exponentials stay finite."""
        if kind == "kl_div":  # log_target=True: exp(target) * (target - pred)
            target = self.squash(b, target, 4.0)
            pred = self.squash(b, pred, 4.0)
            diff = b.op("sub", [target, pred], lo=-8.0, hi=8.0)
            return b.op("mul", [b.op("exp", [target], lo=0, hi=math.exp(4.0)), diff],
                        lo=-8.0 * math.exp(4.0), hi=8.0 * math.exp(4.0))
        if kind == "soft_margin_loss":  # log(1 + exp(-pred * target))
            # A target in [-1, 1] (labels are +-1): a scale small enough for
            # both would leave every term at log 2, a program of no input.
            target = self.unary(b, target, "tanh")
            pred = self.squash(b, pred, 8.0)
            product = b.op("mul", [b.op("neg", [pred]), target], lo=-8.0, hi=8.0)
            return b.op("log1p", [b.op("exp", [product], lo=0, hi=math.exp(8.0))],
                        lo=0, hi=8.01)
        diff = b.op("sub", [pred, target], lo=pred.lo - target.hi, hi=pred.hi - target.lo)
        if kind == "mse_loss":
            return b.op("pow", [diff, b.scalar(2, "int64")], lo=0, hi=diff.bound ** 2)
        size = b.op("abs", [diff], lo=0, hi=diff.bound)
        if kind == "l1_loss":
            return size
        c = self.rng.choice((1.0, 1.0, 0.5, 2.0))  # beta, delta; 1.0 the default
        near = _compare_scalar(b, "lt", size, c)
        if kind == "smooth_l1_loss":  # 0.5 a^2 / beta below beta, a - beta / 2 above
            quad = _scalar_op(b, "mul", b.op("pow", [size, b.scalar(2, "int64")]), 0.5)
            if c != 1.0:
                quad = _scalar_op(b, "div", quad, c)
            far = _scalar_op(b, "sub", size, c / 2)
        else:  # huber: 0.5 a^2 below delta, delta (a - delta / 2) above
            quad = b.op("mul", [_scalar_op(b, "mul", size, 0.5), size])
            far = _scalar_op(b, "sub", size, c / 2)
            if c != 1.0:
                far = _scalar_op(b, "mul", far, c)
        return b.op("where", [near, quad, far], lo=0, hi=max(size.bound ** 2, size.bound * c))

    def loss(self, b, kind, pred):
        """F.<kind>(pred, target) of a new target input, over every element."""
        rng = self.rng
        shape = pred.shape
        extent = math.prod(shape)
        # A half-precision sum stays below its largest value.
        per_element = 30000.0 / extent if pred.dtype != "float32" else 1e30
        limit = {"mse_loss": math.sqrt(per_element) / 2}.get(kind, per_element / 4)
        pred = self.squash(b, pred, min(limit, self.limit(pred)))
        target = self.squash(b, self.new_input(b, shape), min(limit, self.limit(pred)))
        term = self.loss_term(b, kind, pred, target)
        total = b.reduce("sum", term, range(len(shape)), lo=term.lo * extent,
                         hi=term.hi * extent)
        if kind == "kl_div" and shape[0] > 1 and rng.random() < 0.7:
            count = float(shape[0])  # batchmean
        elif rng.random() < 0.75 and extent > 1:
            count = float(extent)  # mean
        else:
            return total
        if not holds_exactly(count, pred.dtype):
            return total
        return b.op("div", [total, b.scalar(count, pred.dtype)], lo=term.lo, hi=term.hi)

    def cross_entropy(self, b, logits):
        """F.cross_entropy(logits, target) of [N, C] logits and a new input
        of N class indices, as the compiler renders it: the log-softmax over
        the classes gathered at each row's target, targets equal to the
        ignore index (-100) masked out, then the sum, or the mean over the
        targets kept. Made of two stages of reductions: over each row, then
        over the rows."""
        n, c = logits.shape
        dtype = logits.dtype
        if dtype != "float32":  # the half-precision sum of N terms stays finite
            logits = self.squash(b, logits, min(self.limit(logits), 15000.0 / n))
        target = b.input((n,), "int64", lo=0, hi=c - 1)
        log_p = b.op("log_softmax", [logits], lo=-2 * logits.bound - math.log(c), hi=0.0,
                     ints={"dim": [1]})
        kept = b.op("ne", [target, b.scalar(-100, "int64")], dtype="bool")
        safe = b.op("where", [kept, target, b.full(0, (1,), "int64")], lo=0, hi=c - 1)
        row = b.arange((n, 1), 0)
        picked = b.index(log_p, [row, b.reshape(safe, (n, 1))])
        nll = b.op("neg", [b.reshape(picked, (n,))], lo=0, hi=-log_p.lo)
        masked = b.op("where", [kept, nll, b.full(0.0, (1,), dtype)], lo=0, hi=nll.hi)
        if self.rng.random() < 0.25:  # reduction="sum"
            return b.reduce("sum", masked, [0], lo=0, hi=nll.hi * n)
        count = b.reduce("sum", b.op("to", [kept], dtype="int64", lo=0, hi=1), [0], lo=0, hi=n)
        count = b.op("to", [count], dtype=dtype, lo=0, hi=n)
        total = b.reduce("sum", masked, [0], lo=0, hi=nll.hi * n)
        return b.op("div", [total, count], lo=0, hi=nll.hi)

    def draw_cross_entropy(self):
        rng = self.rng
        self.dtype = self.compute_dtype = rng.choice(FLOATS + ("float32",))
        while True:
            shape = draw_shape(rng)
            if len(shape) >= 2 and shape[1] > 1:
                break
        self.shape = shape = (shape[0], math.prod(shape[1:]))
        b = ProgramBuilder()
        v = self.new_input(b, shape)
        if rng.random() < 0.3:
            v = self.unary(b, v)
        self.used += ["cross_entropy", "log_softmax"]
        r = self.cross_entropy(b, v)
        self.shape = ()
        if rng.random() < 0.3:
            r = self.unary(b, r)
        return b.build([r]), [u for u in self.used if u != "scale"]

    def draw_loss(self):
        rng = self.rng
        kind = rng.choice(self.losses)
        if kind == "cross_entropy":
            return self.draw_cross_entropy()
        self.dtype = self.compute_dtype = "float32" if kind in FLOAT32_LOSSES else \
            rng.choice(FLOATS + ("float32",))
        for _ in range(100):
            shape = draw_shape(rng)
            if any(s > 1 for s in shape):
                break
        self.shape = shape
        b = ProgramBuilder()
        v = self.new_input(b, shape)
        if rng.random() < 0.3:
            v = self.unary(b, v)
        self.used.append(kind)
        r = self.loss(b, kind, v)
        self.shape = ()
        reduced = [r]
        for _ in range(rng.choice((0, 0, 1))):
            r = self.unary(b, r) if rng.random() < 0.6 else self.binary(b, r, reduced)
            reduced.append(r)
        return b.build([r]), [u for u in self.used if u != "scale"]

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
        if kind == "logsumexp":
            return kept(b.reduce(kind, v, dims, lo=v.lo, hi=v.hi + math.log(extent)))
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
