"""The attention grammar: `softmax(q @ k.transpose(-1, -2) * scale + masks)
@ v` over 3-D ([B, L, D]) or 4-D ([B, H, L, D]) operands, with
an elementwise epilogue (0-2 productions), in float32 or half precision
(q and k scaled so that the scores stay finite), as the compiler renders
it: k's transpose as a permute, a 4-D batched matmul as the 3-D one of
`[B*H, L, D]` views, reshaped back, a half-precision one over float32
casts, cast back.

Masks: a causal mask (`masked_fill(triu(ones(L, S), 1), -inf)`, which the
compiler renders as `arange(S) - arange(L)[:, None] >= 1` and'ed with a
constant true tensor, then a `where` with -inf) and an additive padding
mask (an input of shape [B, 1, 1, S], or [B, 1, S] in 3-D). The scale is
1/sqrt(D) as a multiplication or sqrt(D) as a division (a constant that
float32 does not hold exactly as the compiler renders it: a [1, ...] full
of the rounded value), or none."""

import math
import random

from dice.engine.elementwise import Grammar
from dice.engine.losses import small_constant
from dice.engine.program import INPUT_BOUND, ProgramBuilder, rounded
from dice.engine.shapes import draw_size

KINDS = ("attention",)
MASKS = ("causal_mask", "padding_mask")
# Scores a row holds at most: a block keeps the row in shared memory.
MAX_KEYS = 2048
MAX_ELEMENTS = 1 << 22
# A bound on the scores of half-precision attention (float16 holds 65504):
# q and k are scaled so that |q| |k| D stays below it.
HALF_SCORES = 30000.0


class AttentionGrammar(Grammar):
    def __init__(self, rng, exclude=()):
        super().__init__(rng, exclude)
        self.kinds = [k for k in KINDS if k not in exclude]

    def sizes(self):
        """(batch dims, L, S, D, E): queries, keys, the query/key width
        and the value width."""
        rng = self.rng
        batch = (draw_size(rng, 16),) if rng.random() < 0.4 else \
            (draw_size(rng, 8), draw_size(rng, 16))
        length = draw_size(rng, 512)
        keys = length if rng.random() < 0.6 else draw_size(rng, MAX_KEYS)
        width = rng.choice((16, 32, 64, 64, 128)) if rng.random() < 0.7 else draw_size(rng, 128)
        values = width if rng.random() < 0.7 else draw_size(rng, 128)
        while math.prod(batch) * length * max(keys, width, values) > MAX_ELEMENTS:
            length = max(1, length // 2)
            batch = tuple(max(1, s // 2) for s in batch)
        return batch, length, keys, width, values

    def scale(self, b, v, width):
        """`v * (1 / sqrt(D))`, `v / sqrt(D)` or `v` itself."""
        r = self.rng.random()
        if r < 0.2:
            return v
        self.used.append("scale")
        root = math.sqrt(width)
        fn, value = ("mul", 1 / root) if r < 0.6 else ("div", root)
        if v.dtype == "float32":
            c = small_constant(b, value, "float32", v.rank)
        else:  # a [1, ...] full of the value as the dtype rounds it
            c = b.full(rounded(value, v.dtype), (1,) * v.rank, v.dtype)
        bound = v.bound / root
        return b.op(fn, [v, c], lo=-bound, hi=bound)

    def causal(self, b, v):
        """`v.masked_fill(triu(ones(L, S), 1), -inf)` as the compiler writes it."""
        length, keys = v.shape[-2:]
        rank = v.rank
        true = b.full(1, (length, keys), "bool")
        above = b.op("ge", [b.op("sub", [b.arange((1, keys), 1), b.arange((length, 1), 0)],
                                 lo=-length, hi=keys), b.scalar(1, "int64")], dtype="bool")
        mask = b.reshape(b.op("logical_and", [above, true], dtype="bool"),
                         (1,) * (rank - 2) + (length, keys))
        minus_inf = b.full("-inf", (1,) * rank, v.dtype)
        self.used.append("causal_mask")
        return b.op("where", [mask, minus_inf, v], lo=v.lo, hi=v.hi)

    def padding(self, b, v, batch):
        """`v + mask`, an additive mask of one row of keys for each batch."""
        keys = v.shape[-1]
        shape = batch[:1] + (1,) * (v.rank - 2) + (keys,)
        mask = b.input(shape, v.dtype)
        self.used.append("padding_mask")
        return b.op("add", [v, mask], lo=v.lo - INPUT_BOUND, hi=v.hi + INPUT_BOUND)

    def matmul(self, b, x, y, shape, **bounds):
        """x @ y of shape `shape`, as the compiler renders it: a 4-D one as
        the 3-D one of `[B*H, ., .]` views, a half-precision one over
        float32 operands and cast back."""
        if len(shape) == 4:
            flat = (shape[0] * shape[1],)
            x, y = b.reshape(x, flat + x.shape[2:]), b.reshape(y, flat + y.shape[2:])
        half = x.dtype != "float32"
        if half:
            x, y = b.op("to", [x], dtype="float32"), b.op("to", [y], dtype="float32")
        v = b.matmul(x, y, **bounds)
        if half:
            v = b.op("to", [v], dtype=self.dtype, lo=v.lo, hi=v.hi)
        return b.reshape(v, shape) if len(shape) == 4 else v

    def draw(self, size=None):
        rng = self.rng
        self.used = ["attention"]
        self.dtype = self.compute_dtype = rng.choice(("float32", "float32", "float16",
                                                      "bfloat16"))
        batch, length, keys, width, values = self.sizes()
        b = ProgramBuilder()
        q = b.input(batch + (length, width), self.dtype)
        k = b.input(batch + (keys, width), self.dtype)
        if self.dtype != "float32":  # scores that half precision holds
            limit = math.sqrt(HALF_SCORES / width)
            q, k = self.squash(b, q, limit), self.squash(b, k, limit)
        out = self.attend(b, q, k, b.input(batch + (keys, values), self.dtype))
        self.shape = out.shape
        pool = [out]
        for _ in range(rng.choice((0, 0, 1, 2))):
            out = self.unary(b, out) if rng.random() < 0.5 else self.binary(b, out, pool)
            pool.append(out)
        return b.build([out]), [u for u in self.used if u != "scale"]

    def attend(self, b, q, k, v):
        """`softmax(q @ k.transpose(-1, -2) * scale + masks) @ v` of values
        `q` [*B, L, D], `k` [*B, S, D] and `v` [*B, S, E]: a scale, a causal
        mask 40% of the time where L <= S and a padding mask 30%."""
        rng = self.rng
        batch, (length, width), keys = q.shape[:-2], q.shape[-2:], k.shape[-2]
        rank = q.rank
        k_t = b.permute(k, tuple(range(rank - 2)) + (rank - 1, rank - 2))
        bound = q.bound * k.bound * width
        s = self.matmul(b, q, k_t, batch + (length, keys), lo=-bound, hi=bound)
        s = self.scale(b, s, width)
        if length <= keys and rng.random() < 0.4:
            s = self.causal(b, s)
        if rng.random() < 0.3:
            s = self.padding(b, s, batch)
        p = b.op("softmax", [s], lo=0.0, hi=1.0, ints={"dim": [rank - 1]})
        return self.matmul(b, p, v, batch + (length, v.shape[-1]))


def draw_attention(seed):
    """One program from a fresh grammar (for tests and examples)."""
    return AttentionGrammar(random.Random(seed)).draw()
