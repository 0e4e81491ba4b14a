"""The attention grammar: `softmax(q @ k.transpose(-1, -2) * scale + masks)
@ v` over 3-D ([B, L, D]) or 4-D ([B, H, L, D]) operands in float32, with
an elementwise epilogue (0-2 productions), as the compiler renders it:
k's transpose as a permute, a 4-D batched matmul as the 3-D one of
`[B*H, L, D]` views, reshaped back.

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
from dice.engine.program import INPUT_BOUND, ProgramBuilder
from dice.engine.shapes import draw_size

KINDS = ("attention",)
MASKS = ("causal_mask", "padding_mask")
# Scores a row holds at most: a block keeps the row in shared memory.
MAX_KEYS = 2048
MAX_ELEMENTS = 1 << 22


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
        c = small_constant(b, value, "float32", v.rank)
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
        minus_inf = b.full("-inf", (1,) * rank, "float32")
        self.used.append("causal_mask")
        return b.op("where", [mask, minus_inf, v], lo=v.lo, hi=v.hi)

    def padding(self, b, v, batch):
        """`v + mask`, an additive mask of one row of keys for each batch."""
        keys = v.shape[-1]
        shape = batch[:1] + (1,) * (v.rank - 2) + (keys,)
        mask = b.input(shape, "float32")
        self.used.append("padding_mask")
        return b.op("add", [v, mask], lo=v.lo - INPUT_BOUND, hi=v.hi + INPUT_BOUND)

    def draw(self, size=None):
        rng = self.rng
        self.used = ["attention"]
        self.dtype = self.compute_dtype = "float32"
        batch, length, keys, width, values = self.sizes()
        b = ProgramBuilder()
        q = b.input(batch + (length, width), "float32")
        k = b.input(batch + (keys, width), "float32")
        rank = len(batch) + 2
        flat = (math.prod(batch),)
        k_t = b.permute(k, tuple(range(rank - 2)) + (rank - 1, rank - 2))
        bound = INPUT_BOUND * INPUT_BOUND * width
        if rank == 4:  # the compiler's batched matmul is 3-D
            s = b.matmul(b.reshape(q, flat + (length, width)),
                         b.reshape(k_t, flat + (width, keys)), lo=-bound, hi=bound)
            s = b.reshape(s, batch + (length, keys))
        else:
            s = b.matmul(q, k_t, lo=-bound, hi=bound)
        s = self.scale(b, s, width)
        if length <= keys and rng.random() < 0.4:
            s = self.causal(b, s)
        if rng.random() < 0.3:
            s = self.padding(b, s, batch)
        p = b.op("softmax", [s], lo=0.0, hi=1.0, ints={"dim": [rank - 1]})
        v_in = b.input(batch + (keys, values), "float32")
        if rank == 4:
            out = b.matmul(b.reshape(p, flat + (length, keys)),
                           b.reshape(v_in, flat + (keys, values)))
            out = b.reshape(out, batch + (length, values))
        else:
            out = b.matmul(p, v_in)
        self.shape = out.shape
        pool = [out]
        for _ in range(rng.choice((0, 0, 1, 2))):
            out = self.unary(b, out) if rng.random() < 0.5 else self.binary(b, out, pool)
            pool.append(out)
        return b.build([out]), [u for u in self.used if u != "scale"]


def draw_attention(seed):
    """One program from a fresh grammar (for tests and examples)."""
    return AttentionGrammar(random.Random(seed)).draw()
