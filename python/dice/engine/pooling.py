"""The pooling grammar: max and average pooling over 1-3 spatial dims,
with kernel, stride, padding, dilation and ceil mode (max), an
elementwise prologue (0-1 productions) and epilogue (0-2), as the compiler
renders them: padding as a `pad` before a pool that pads nothing (-inf
for max, 0 for average, which counts the padding as PyTorch's default
does); an average as a `sum_pool` and a division by the window's size; a
1-D pool as the 2-D pool of an [N, C, 1, L] view, reshaped back; ceil
mode as more padding at the end; a 3-D average pool between permutes to
channels last and back."""

import math

from dice.engine.elementwise import Grammar
from dice.engine.program import ProgramBuilder

KINDS = ("max_pool", "avg_pool")
CEIL_SHARE = 0.3


def ceil_padding(sizes, kernel, stride, padding, dilation):
    """The elements `ceil_mode=True` pads each dim with at its end: the
    last window may run past the input, if it starts inside it (or its
    left padding)."""
    extra = []
    for size, k, s, p, d in zip(sizes, kernel, stride, padding, dilation):
        span = size + 2 * p - d * (k - 1) - 1
        out = -(-span // s) + 1
        if (out - 1) * s >= size + p:
            out -= 1
        extra.append(max(0, (out - 1) * s + d * (k - 1) + 1 - (size + 2 * p)))
    return extra


class PoolingGrammar(Grammar):
    def __init__(self, rng, exclude=()):
        super().__init__(rng, exclude)
        self.kinds = [k for k in KINDS if k not in exclude]

    def window(self, kind, spatial):
        """(kernel, stride, padding, dilation, sizes) of one drawn pool."""
        rng = self.rng
        k = rng.choice((2, 2, 3, 3, 4, 5)) if spatial < 3 else rng.choice((2, 3))
        kernel = [k] * spatial if rng.random() < 0.8 else \
            [rng.choice((2, 3)) for _ in range(spatial)]
        dilation = [rng.choice((1, 1, 1, 2)) if kind == "max_pool" else 1] * spatial
        stride = [rng.choice((1, 2, kk)) for kk in kernel]
        padding = [rng.choice((0, 0, kk // 2)) for kk in kernel]
        largest = {1: 4096, 2: 96, 3: 24}[spatial]
        sizes = [rng.randint(d * (kk - 1) + 1, largest)
                 for kk, d in zip(kernel, dilation)]
        return kernel, stride, padding, dilation, sizes

    def draw(self, size=None):
        rng = self.rng
        self.used = []
        kind = rng.choice(self.kinds)
        spatial = rng.choice((1, 2, 2, 3))
        # PyTorch's CPU 3-D average pool (what checks a drawn program) takes
        # float32 only.
        self.dtype = "float32" if kind == "avg_pool" and spatial == 3 else \
            rng.choice(("float32", "float32", "float16", "bfloat16"))
        self.compute_dtype = self.dtype
        kernel, stride, padding, dilation, sizes = self.window(kind, spatial)
        batch = (rng.randint(1, 8), rng.randint(1, 64 if spatial < 3 else 8))
        self.shape = batch + tuple(sizes)
        b = ProgramBuilder()
        v = self.new_input(b, self.shape)
        if rng.random() < 0.5:
            v = self.unary(b, v)
        v = self.pool(b, v, kind, (kernel, stride, padding, dilation))
        self.used.append(kind)
        self.shape = v.shape
        return self.finish(b, v)

    def pool(self, b, v, kind, window):
        """`v` ([N, C, *S], 1-3 spatial dims) max or average pooled
        (`kind`) over (kernel, stride, padding, dilation) `window`, max in
        ceil mode CEIL_SHARE of the time, as the compiler renders it."""
        rng = self.rng
        kernel, stride, padding, dilation = window
        spatial = v.rank - 2
        batch = v.shape[:2]
        sizes = v.shape[2:]
        if spatial == 1:  # the 2-D pool of an [N, C, 1, L] view
            v = b.reshape(v, batch + (1, sizes[0]))
            kernel, stride, padding, dilation = ([1] + kernel, [1] + stride, [0] + padding,
                                                 [1] + dilation)
        high = list(padding)
        if kind == "max_pool" and rng.random() < CEIL_SHARE:  # ceil_mode=True
            extra = ceil_padding(v.shape[2:], kernel, stride, padding, dilation)
            if any(extra):
                self.used.append("ceil_mode")
                high = [p + e for p, e in zip(padding, extra)]
        if any(padding) or high != padding:
            v = b.pad(v, [0, 0] + padding, [0, 0] + high, "-inf" if kind == "max_pool" else 0.0)
        ints = {"kernel": kernel, "stride": stride, "padding": [0] * len(kernel)}
        if kind == "max_pool":
            ints["dilation"] = dilation
        # A 3-D average pool goes through channels last and back, as
        # torch-mlir lowers it.
        there, back = (0, 2, 3, 4, 1), (0, 4, 1, 2, 3)
        sum_3d = kind == "avg_pool" and spatial == 3
        if sum_3d:
            v = b.permute(b.permute(v, there), back)
        v = b.pool("max_pool" if kind == "max_pool" else "sum_pool", v, ints)
        if sum_3d:
            v = b.permute(b.permute(v, there), back)
        if kind == "avg_pool":
            count = math.prod(kernel)
            v = b.op("div", [v, b.scalar(float(count), v.dtype)], lo=v.lo / count,
                     hi=v.hi / count)
        if spatial == 1:
            v = b.reshape(v, v.shape[:2] + v.shape[3:])
        return v
