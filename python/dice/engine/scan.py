"""The scan grammar: an elementwise prologue (0-2 productions, a mask
among them: `x * (x > 0)`), `torch.cumsum` or `torch.cumprod` along any
dim, a quarter of them reversed (`cumsum(x.flip(d), d).flip(d)`), and an
elementwise epilogue (0-2) that may read the prologue's value again
(`cumsum(x) - x`, the exclusive sum), as the compiler renders them:
`torch.cumsum(x, dim=d)` (the result in x's dtype, torch's default), a
flip as an index by aranges, reversed along d.

A half-precision sum of a whole row stays below the dtype's largest
value; a product multiplies values near 1 (`1 + tanh(x) / 4`) over rows
short enough to stay finite."""

import random

from dice.engine.elementwise import Grammar, _scalar_op
from dice.engine.program import FLOATS, ProgramBuilder
from dice.engine.shapes import draw_shape

KINDS = ("cumsum", "cumprod")
# Rows a product runs along: 1.25^64 stays finite in float32, 1.25^32 in
# half precision.
PRODUCT_ROWS = {"float32": 64, "float16": 32, "bfloat16": 32}
REVERSED_SHARE = 0.25


class ScanGrammar(Grammar):
    def __init__(self, rng, exclude=()):
        super().__init__(rng, exclude)
        self.kinds = [k for k in KINDS if k not in exclude]

    def mask(self, b, v):
        """`v * (v > 0)` or `v * (v < 0)`: the elements a masked scan adds."""
        zero = b.full(0.0, (1,) * v.rank, v.dtype)
        keep = b.op(self.rng.choice(("gt", "lt")), [v, zero], dtype="bool")
        self.used.append("mask")
        return b.op("mul", [v, b.op("to", [keep], dtype=v.dtype, lo=0, hi=1)],
                    lo=min(v.lo, 0.0), hi=max(v.hi, 0.0))

    def draw(self, size=None):
        rng = self.rng
        self.used = []
        kind = rng.choice(self.kinds)
        self.dtype = self.compute_dtype = rng.choice(FLOATS + ("float32",))
        for _ in range(100):
            shape = draw_shape(rng)
            dims = [d for d, s in enumerate(shape) if s > 1]
            if dims:
                break
        dim = rng.choice(dims)
        if kind == "cumprod" and shape[dim] > PRODUCT_ROWS[self.dtype]:
            shape = shape[:dim] + (rng.randint(2, PRODUCT_ROWS[self.dtype]),) + shape[dim + 1:]
        self.shape = shape
        b = ProgramBuilder()
        v = self.new_input(b, shape)
        pool = [v]
        for _ in range(rng.choice((0, 1, 1, 2))):
            r = rng.random()
            v = self.mask(b, v) if r < 0.25 else self.unary(b, v) if r < 0.65 else \
                self.binary(b, v, pool)
            pool.append(v)
        if kind == "cumprod":  # values near 1
            self.used.append("tanh")
            v = _scalar_op(b, "mul", b.op("tanh", [v], lo=-1, hi=1), 0.25, lo=-0.25, hi=0.25)
            v = _scalar_op(b, "add", v, 1.0, lo=0.75, hi=1.25)
            bound = 1.25 ** shape[dim]
        else:
            if v.dtype != "float32":
                v = self.squash(b, v, min(self.limit(v), 30000.0 / shape[dim]))
            bound = v.bound * shape[dim]
        self.used.append(kind)
        reverse = rng.random() < REVERSED_SHARE  # cumsum(x.flip(d), d).flip(d)
        r = b.op(kind, [b.flip(v, dim) if reverse else v], lo=-bound, hi=bound,
                 ints={"dim": [dim]})
        if reverse:
            self.used.append("reversed")
            r = b.flip(r, dim)
        scanned = [r]
        for _ in range(rng.choice((0, 1, 1, 2))):
            if rng.random() < 0.3 and kind == "cumsum":  # the exclusive sum
                self.used.append("exclusive")
                r = b.op("sub", [r, v], lo=r.lo - v.hi, hi=r.hi - v.lo)
            else:
                r = self.unary(b, r) if rng.random() < 0.6 else self.binary(b, r, scanned)
            scanned.append(r)
        return b.build([r]), [u for u in self.used if u != "scale"]


def draw_scan(seed):
    """One program from a fresh grammar (for tests and examples)."""
    return ScanGrammar(random.Random(seed)).draw()
