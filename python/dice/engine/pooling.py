"""The pooling grammar: max and average pooling over 1 or 2 spatial dims
(max also over 3), with kernel, stride, padding and dilation (max), an
elementwise prologue (0-1 productions) and epilogue (0-2), as the compiler
renders them: padding as a `pad` before a pool that pads nothing (-inf
for max, 0 for average, which counts the padding as PyTorch's default
does); an average as a `sum_pool` and a division by the window's size; a
1-D pool as the 2-D pool of an [N, C, 1, L] view, reshaped back."""

import math

from dice.engine.elementwise import Grammar
from dice.engine.program import ProgramBuilder

KINDS = ("max_pool", "avg_pool")


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
        spatial = rng.choice((1, 2, 2, 3) if kind == "max_pool" else (1, 2, 2))
        self.dtype = rng.choice(("float32", "float32", "float16", "bfloat16"))
        self.compute_dtype = self.dtype
        kernel, stride, padding, dilation, sizes = self.window(kind, spatial)
        batch = (rng.randint(1, 8), rng.randint(1, 64 if spatial < 3 else 8))
        self.shape = batch + tuple(sizes)
        b = ProgramBuilder()
        v = self.new_input(b, self.shape)
        if rng.random() < 0.5:
            v = self.unary(b, v)
        if spatial == 1:  # the 2-D pool of an [N, C, 1, L] view
            v = b.reshape(v, batch + (1, sizes[0]))
            kernel, stride, padding, dilation = ([1] + kernel, [1] + stride, [0] + padding,
                                                 [1] + dilation)
        if any(padding):
            v = b.pad(v, [0, 0] + padding, [0, 0] + padding,
                      "-inf" if kind == "max_pool" else 0.0)
        ints = {"kernel": kernel, "stride": stride, "padding": [0] * len(kernel)}
        if kind == "max_pool":
            ints["dilation"] = dilation
        v = b.pool("max_pool" if kind == "max_pool" else "sum_pool", v, ints)
        if kind == "avg_pool":
            count = math.prod(kernel)
            v = b.op("div", [v, b.scalar(float(count), v.dtype)], lo=v.lo / count,
                     hi=v.hi / count)
        if spatial == 1:
            v = b.reshape(v, v.shape[:2] + v.shape[3:])
        self.used.append(kind)
        self.shape = v.shape
        return self.finish(b, v)
