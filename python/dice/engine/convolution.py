"""The convolution grammar: `F.conv1d` and `F.conv2d` (stride, padding,
dilation, bias; one group) in float32, with an elementwise prologue on the
input (0-1 productions) and an epilogue (0-2), as the compiler renders
them: padding as a `pad` before a convolution that pads nothing; a bias as
its `[1, C, 1, 1]` view expanded to the result and added first; a 1-D
convolution as the 2-D one of `[N, C, L, 1]` views, reshaped back."""

import math

from dice.engine.elementwise import Grammar
from dice.engine.program import ProgramBuilder, window_sizes

KINDS = ("conv1d", "conv2d")


class ConvolutionGrammar(Grammar):
    def __init__(self, rng, exclude=()):
        super().__init__(rng, exclude)
        self.kinds = [k for k in KINDS if k not in exclude]

    def window(self, spatial):
        """(kernel, stride, padding, dilation, sizes) of one convolution."""
        rng = self.rng
        k = rng.choice((1, 3, 3, 3, 5)) if spatial == 2 else rng.choice((1, 3, 3, 5, 7))
        kernel = [k] * spatial if rng.random() < 0.8 else \
            [rng.choice((1, 3)) for _ in range(spatial)]
        dilation = [rng.choice((1, 1, 1, 2))] * spatial
        stride = [rng.choice((1, 1, 2))] * spatial
        padding = [rng.choice((0, kk // 2, kk // 2)) for kk in kernel]
        largest = 48 if spatial == 2 else 512
        sizes = [rng.randint(d * (kk - 1) + 1, largest) for kk, d in zip(kernel, dilation)]
        return kernel, stride, padding, dilation, sizes

    def draw(self, size=None):
        rng = self.rng
        self.used = []
        kind = rng.choice(self.kinds)
        spatial = 1 if kind == "conv1d" else 2
        self.dtype = self.compute_dtype = "float32"
        kernel, stride, padding, dilation, sizes = self.window(spatial)
        channels, features = rng.randint(1, 32), rng.randint(1, 32)
        n = rng.randint(1, 4)
        b = ProgramBuilder()
        x = self.new_input(b, (n, channels) + tuple(sizes))
        if rng.random() < 0.5:
            x = self.unary(b, x)
        w = b.input((features, channels) + tuple(kernel), "float32")
        if spatial == 1:  # the 2-D convolution of [N, C, L, 1] views
            x = b.reshape(x, x.shape + (1,))
            kernel, stride, padding, dilation = (kernel + [1], stride + [1], padding + [0],
                                                 dilation + [1])
        if any(padding):
            x = b.pad(x, [0, 0] + padding, [0, 0] + padding, 0.0)
        bias = None
        if rng.random() < 0.5:
            bias = b.input((features,), "float32")
        if spatial == 1:
            w = b.reshape(w, w.shape + (1,))
        bound = x.bound * w.bound * channels * math.prod(kernel)
        out_shape = (n, features) + window_sizes(x.shape[2:], kernel, stride, dilation)
        if bias is not None:
            bias = b.expand(b.reshape(bias, (1, features) + (1,) * len(kernel)), out_shape)
        v = b.conv(x, w, stride, dilation, lo=-bound, hi=bound)
        if bias is not None:
            v = b.op("add", [bias, v], lo=v.lo - bias.bound, hi=v.hi + bias.bound)
        if spatial == 1:
            v = b.reshape(v, v.shape[:3])
        self.used.append(kind)
        self.shape = v.shape
        return self.finish(b, v)
