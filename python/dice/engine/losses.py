"""The losses of the reduction grammar (dice.engine.reduction draws them),
each written as the compiler renders its printed program back:

- over every element of a prediction (after 0-1 productions) and a new
  target input: MSE, L1, smooth L1, Huber, KL divergence (log target),
  soft margin, hinge embedding; a sum, then a division by the count
  (`mean`), by the batch (`kl_div`'s `batchmean`) or none (`sum`);
- over rows first, then over the rows (two stages of reductions): cross
  entropy of [N, C] logits and class indices, cosine embedding of two
  [N, D] inputs and a target, triplet margin of an anchor, a positive and
  a negative;

and an epilogue (0-1 productions) on the 0-d result. Inputs are scaled so
that a half-precision sum stays finite."""

import math
import struct

from dice.engine.elementwise import _compare_scalar, _scalar_op
from dice.engine.program import FLOATS, ProgramBuilder, holds_exactly, to_bfloat16
from dice.engine.shapes import draw_shape

# Losses of a prediction against a target, each an elementwise term summed
# over every element (reduction "sum"), then divided by the count ("mean")
# or, for kl_div, by the batch ("batchmean").
ELEMENTWISE_LOSSES = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
                      "soft_margin_loss", "hinge_embedding_loss")
# Losses over rows, then over the rows.
ROW_LOSSES = ("cross_entropy", "cosine_embedding_loss", "triplet_margin_loss")
LOSSES = ELEMENTWISE_LOSSES + ROW_LOSSES
# Losses whose terms grow too fast for a half-precision sum: float32 only.
FLOAT32_LOSSES = ("kl_div", "soft_margin_loss")
# A half-precision sum of this many units stays finite (65504 the largest).
HALF_SUM = 15000.0
# Hinge and triplet margins: 1 the default; a small one keeps the loss of
# inputs scaled down for a half-precision sum from being the margin alone.
MARGINS = (1.0, 1.0, 0.5, 2.0, 0.125, 0.125)


def clamp_min_zero(b, v):
    """`clamp(v, min=0)` as the compiler renders its printed form back: v
    compared with 0 in float64, the comparison negated as `== 0` of its
    int64 value, a `where` choosing a zero of v's rank."""
    zero = b.full(0.0, (1,) * v.rank, v.dtype)
    at_least = _compare_scalar(b, "ge", v, 0.0)
    below = b.op("eq", [b.op("to", [at_least], dtype="int64", lo=0, hi=1),
                        b.scalar(0, "int64")], dtype="bool")
    return b.op("where", [below, zero, v], lo=max(v.lo, 0.0), hi=max(v.hi, 0.0))


def small_constant(b, value, dtype, rank):
    """A constant (an eps) added to a value of rank `rank`, as the compiler
    renders it: a float32 number where float32 holds it exactly, else a
    full of shape [1, ...] of it rounded once (bfloat16 too); for float16,
    which holds an eps only as a subnormal or not at all, a float64 0-d
    full cast once and lifted for each op that reads it (call this once
    for each)."""
    if dtype == "float32":
        as_float = struct.unpack("<f", struct.pack("<f", value))[0]
        if as_float == value:
            return b.scalar(value, dtype)
        return b.full(as_float, (1,) * rank, dtype)
    if dtype == "bfloat16":
        return b.full(to_bfloat16(value), (1,) * rank, dtype)
    cast = b.op("to", [b.full(value, (), "float64")], dtype=dtype, lo=0, hi=value)
    return b.reshape(cast, (1,) * rank, shared=False)


class LossGrammar:
    """The losses, for a grammar of dice.engine.elementwise's kind."""

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
        if kind == "hinge_embedding_loss":
            return self.hinge_term(b, pred, target)
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
        target = self.new_input(b, shape)
        if kind == "hinge_embedding_loss":  # labels: a random input is never +-1
            target = self.unary(b, target, "sign")
        else:
            target = self.squash(b, target, min(limit, self.limit(pred)))
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
            logits = self.squash(b, logits, min(self.limit(logits), HALF_SUM / n))
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

    def hinge_term(self, b, x, target):
        """F.hinge_embedding_loss's term: `x` where the target is not 1,
        `clamp(margin - x, min=0)` where it is not -1, summed."""
        margin = self.rng.choice(MARGINS)
        shape, dtype = x.shape, x.dtype
        short = b.op("sub", [b.full(margin, shape, dtype), x], lo=margin - x.hi, hi=margin - x.lo)
        short = clamp_min_zero(b, short)
        label = b.op("to", [target], dtype="float64", lo=target.lo, hi=target.hi)
        zero = b.full(0.0, shape, dtype)
        below = b.op("where", [b.op("ne", [label, b.scalar(1.0, "float64")], dtype="bool"),
                               short, zero], lo=0, hi=short.hi)
        above = b.op("where", [b.op("ne", [label, b.scalar(-1.0, "float64")], dtype="bool"),
                               x, zero], lo=min(x.lo, 0.0), hi=max(x.hi, 0.0))
        return b.op("add", [below, above], lo=above.lo, hi=below.hi + above.hi)

    def mean_or_sum(self, b, total, count, term):
        """`total` divided by `count` (reduction "mean", 3 in 4 where the
        dtype holds the count) or as it is ("sum")."""
        if self.rng.random() < 0.25 or not holds_exactly(float(count), total.dtype):
            return total
        return b.op("div", [total, b.scalar(float(count), total.dtype)], lo=term.lo, hi=term.hi)

    def triplet_margin(self, b, anchor):
        """F.triplet_margin_loss(anchor, positive, negative) of [N, D]
        inputs (p=2, eps 1e-6): each row's distance to the positive and to
        the negative, `sqrt(sum(|a - p + eps|^2))`, then the mean (or sum)
        of `clamp(d_ap + margin - d_an, min=0)` over the rows."""
        n, d = anchor.shape
        dtype = anchor.dtype
        limit = math.sqrt(HALF_SUM / d) / 4 if dtype != "float32" else self.limit(anchor)
        anchor = self.squash(b, anchor, min(limit, self.limit(anchor)))
        positive, negative = (self.squash(b, self.new_input(b, (n, d)), limit) for _ in range(2))
        margin = self.rng.choice(MARGINS)

        def distance(other):
            diff = b.op("sub", [anchor, other], lo=-anchor.bound - other.bound,
                        hi=anchor.bound + other.bound)
            diff = b.op("add", [diff, small_constant(b, 1e-06, dtype, 2)], lo=diff.lo,
                        hi=diff.hi + 1)
            size = b.op("abs", [diff], lo=0, hi=diff.bound)
            square = b.op("pow", [size, b.scalar(2, "int64")], lo=0, hi=size.hi ** 2)
            total = b.reduce("sum", square, [1], lo=0, hi=square.hi * d)
            return b.op("pow", [total, b.scalar(0.5, dtype)], lo=0, hi=math.sqrt(total.hi))

        near, far = distance(positive), distance(negative)
        gap = b.op("sub", [_scalar_op(b, "add", near, margin), far], lo=-far.hi,
                   hi=near.hi + margin)
        term = clamp_min_zero(b, gap)
        return self.mean_or_sum(b, b.reduce("sum", term, [0], lo=0, hi=term.hi * n), n, term)

    def cosine_embedding(self, b, x1):
        """F.cosine_embedding_loss(x1, x2, target) of [N, D] inputs and an
        [N] target: each row's cosine similarity (its norms' squares offset
        by 1e-12), `1 - cos` where the target is 1, `clamp(cos - margin,
        min=0)` where it is -1, then the mean (or sum) over the rows."""
        n, d = x1.shape
        dtype = x1.dtype
        limit = math.sqrt(HALF_SUM / d) / 2 if dtype != "float32" else self.limit(x1)
        x1 = self.squash(b, x1, min(limit, self.limit(x1)))
        x2 = self.squash(b, self.new_input(b, (n, d)), limit)
        # Labels: a random input is never +-1, and the loss of any other
        # target is 0.
        target = self.unary(b, self.new_input(b, (n,)), "sign")
        margin = self.rng.choice((0.0, 0.0, 0.25, 0.5))
        one = b.full(1.0, (n,), dtype)
        dot = b.reduce("sum", b.op("mul", [x1, x2]), [1], lo=-limit * limit * d,
                       hi=limit * limit * d)

        def square_norm(x):
            total = b.reduce("sum", b.op("mul", [x, x], lo=0, hi=x.bound ** 2), [1], lo=0,
                             hi=x.bound ** 2 * d)
            eps = small_constant(b, 9.999999960041972e-13, dtype, 1)
            return b.op("add", [total, eps], lo=0, hi=total.hi + 1)

        norms = b.op("mul", [square_norm(x1), square_norm(x2)], lo=0, hi=(limit * limit * d) ** 2)
        cos = b.op("div", [dot, b.op("sqrt", [norms], lo=0, hi=limit * limit * d)], lo=-1, hi=1)
        similar = b.op("sub", [one, cos], lo=0, hi=2)
        shifted = _scalar_op(b, "sub", cos, margin, lo=-1 - margin, hi=1 - margin) if margin \
            else cos
        dissimilar = clamp_min_zero(b, shifted)
        label = b.op("to", [target], dtype="float64", lo=target.lo, hi=target.hi)
        zero = b.full(0.0, (n,), dtype)
        term = b.op("add", [
            b.op("where", [b.op("eq", [label, b.scalar(1.0, "float64")], dtype="bool"),
                           similar, zero], lo=0, hi=2),
            b.op("where", [b.op("eq", [label, b.scalar(-1.0, "float64")], dtype="bool"),
                           dissimilar, zero], lo=0, hi=1)], lo=0, hi=3)
        return self.mean_or_sum(b, b.reduce("sum", term, [0], lo=0, hi=3 * n), n, term)

    def draw_row_loss(self, kind):
        """A loss over the rows of [N, D] inputs (a drawn shape's trailing
        dims merged), after a prologue (0-1) on the first input."""
        rng = self.rng
        self.dtype = self.compute_dtype = rng.choice(FLOATS + ("float32",))
        while True:
            shape = draw_shape(rng)
            if len(shape) >= 2 and math.prod(shape[1:]) > 1:
                break
        self.shape = shape = (shape[0], math.prod(shape[1:]))
        b = ProgramBuilder()
        v = self.new_input(b, shape)
        if rng.random() < 0.3:
            v = self.unary(b, v)
        self.used.append(kind)
        if kind == "cross_entropy":
            self.used.append("log_softmax")
            r = self.cross_entropy(b, v)
        elif kind == "triplet_margin_loss":
            r = self.triplet_margin(b, v)
        else:
            r = self.cosine_embedding(b, v)
        self.shape = ()
        if rng.random() < 0.3:
            r = self.unary(b, r)
        return b.build([r]), [u for u in self.used if u != "scale"]

    def draw_loss(self):
        rng = self.rng
        kind = rng.choice(self.losses)
        if kind in ROW_LOSSES:
            return self.draw_row_loss(kind)
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

