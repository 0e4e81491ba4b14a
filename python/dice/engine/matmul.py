"""The matmul grammar: `x @ w`, `F.linear(x, w, b)` (of a matrix, or of an
input of rank 3 or 4) and batched `a @ b`,
then an elementwise epilogue of 0-3 productions (a bias, an activation, a
residual, a scale), as the compiler renders them: linear's weight through
a permute and its bias as a broadcast add; a half-precision matmul as
float32 operands, a float32 matmul and a cast back, the epilogue in half."""

import math

from dice.engine.elementwise import Grammar
from dice.engine.program import INPUT_BOUND, ProgramBuilder
from dice.engine.shapes import draw_size

# linear_nd: a linear of an input of rank 3 or 4, as the compiler gives it:
# the 2-D one between a reshape to rows and one back, the weight [K, N].
FORMS = ("matmul", "linear", "bmm", "linear_nd")


class MatmulGrammar(Grammar):
    def __init__(self, rng, exclude=()):
        super().__init__(rng, exclude)
        self.forms = [f for f in FORMS if f not in exclude]

    def draw(self, size=None):
        rng = self.rng
        self.used = []
        form = rng.choice(self.forms)
        self.dtype = "float32" if form.startswith("linear") else rng.choice(
            ("float32", "float32", "float16", "bfloat16"))
        self.compute_dtype = self.dtype
        m, n, k = draw_size(rng, 512), draw_size(rng, 1024), draw_size(rng, 1024)
        batch = (draw_size(rng, 16),) if form == "bmm" else ()
        b = ProgramBuilder()
        if form.startswith("linear"):
            lead = (m,)
            if form == "linear_nd":  # rows m split into leading dims
                lead = tuple(draw_size(rng, 16) for _ in range(rng.choice((1, 2)))) + \
                    (draw_size(rng, 64),)
            v = self.linear(b, b.input(lead + (k,), self.dtype), n)
        else:
            v = self.matmul(b, b.input(batch + (m, k), self.dtype),
                            b.input(batch + (k, n), self.dtype), form)
        pool = [v]
        for _ in range(rng.choice((0, 1, 1, 2, 3))):
            v = self.unary(b, v) if rng.random() < 0.5 else self.binary(b, v, pool)
            pool.append(v)
        return b.build([v]), [u for u in self.used if u != "scale"]

    def matmul(self, b, a, w, form):
        """`a @ w` (inputs `a` and `w`, of rank 2 or 3), a half-precision
        one as float32 operands, a float32 matmul and a cast back."""
        half = self.dtype != "float32"
        if half:
            a = b.op("to", [a], dtype="float32")
            w = b.op("to", [w], dtype="float32")
        bound = INPUT_BOUND * INPUT_BOUND * a.shape[-1]
        v = b.matmul(a, w, lo=-bound, hi=bound)
        if half:
            v = b.op("to", [v], dtype=self.dtype, lo=v.lo, hi=v.hi)
        self.used.append(form)
        self.shape = v.shape
        return v

    def linear(self, b, x, n):
        """`F.linear(x, w, bias)` (float32) of `x` (a value of rank 2 or
        more) with a new weight of `n` features and a new bias, as the
        compiler renders it: of a matrix, the weight `[n, K]` through a
        permute; of rank 3 or more (linear_nd), the 2-D one between a
        reshape of the leading dims into rows and one back, the weight an
        input `[K, n]`; the bias a broadcast add."""
        k, lead = x.shape[-1], x.shape[:-1]
        form = "linear" if x.rank == 2 else "linear_nd"
        if form == "linear_nd":
            x = b.reshape(x, (math.prod(lead), k))
            w = b.input((k, n), self.dtype)
        else:
            w = b.permute(b.input((n, k), self.dtype), (1, 0))
        bound = x.bound * INPUT_BOUND * k
        v = b.matmul(x, w, lo=-bound, hi=bound)
        self.used.append(form)
        self.shape = v.shape
        bias = b.input((n,), self.dtype)
        v = b.op("add", [v, bias], lo=v.lo - 100, hi=v.hi + 100)
        if form == "linear_nd":
            v = b.reshape(v, lead + (n,))
            self.shape = v.shape
        return v
