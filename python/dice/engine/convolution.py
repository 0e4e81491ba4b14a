"""The convolution grammar: `F.conv1d`, `F.conv2d` and `F.conv3d` (stride,
padding, dilation, bias, groups) in float32, with an elementwise prologue
on the input (0-1 productions) and an epilogue (0-2), as the compiler renders
them: padding as a `pad` before a convolution that pads nothing; a bias as
its `[1, F, 1, 1]` view expanded to the result and added first; a 1-D
convolution as the 2-D one of `[N, C, L, 1]` views, reshaped back.

Three forms, as torch-mlir lowers them and the compiler renders them back:
one group; depthwise (G == C == F: torch-mlir's depthwise convolution, the
dense form with its weight's 1-D view made after the bias's); grouped (any
other G > 1: a convolution over a `[N, G, C/G, *S]` view, its result viewed
as `[N, G, F/G, *S]`, the bias added in that view and the sum viewed back;
without a bias the two views fold into a reshape to the result's own shape,
which the compiler keeps only where it is returned).

A 3-D convolution (a small share of draws, its input at most 2^17
elements) is drawn in the one-group form only: the compiler renders it
directly as `F.conv3d`, its pad and bias as the 2-D one's, but torch-mlir
does not lower a depthwise 3-D convolution and the compiler renders no
request for a grouped one."""

import math

from dice.engine.elementwise import Grammar
from dice.engine.program import ProgramBuilder, window_sizes

KINDS = ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
         "conv_transpose3d")
TRANSPOSED = ("conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
# A bound on a half-precision convolution's result (float16 holds 65504).
HALF_RESULT = 30000.0
CONV3D_SHARE = 0.15
TRANSPOSED_SHARE = 0.15


class _Builder(ProgramBuilder):
    """A builder that returns the value `viewed` (a grouped convolution's
    result) through a reshape to its own shape, as the compiler does: an
    output is a new tensor, so it keeps the folded view there and drops it
    before an op that reads it."""

    viewed = None

    def build(self, outputs):
        outputs = [self.reshape(v, v.shape) if v.key == self.viewed else v for v in outputs]
        return super().build(outputs)


class ConvolutionGrammar(Grammar):
    def __init__(self, rng, exclude=()):
        super().__init__(rng, exclude)
        self.kinds = [k for k in KINDS if k not in exclude]

    def window(self, spatial):
        """(kernel, stride, padding, dilation, sizes) of one convolution."""
        rng = self.rng
        k = rng.choice((1, 3, 3, 5, 7)) if spatial == 1 else \
            rng.choice((1, 3, 3, 3, 5)) if spatial == 2 else rng.choice((1, 2, 3, 3))
        kernel = [k] * spatial if rng.random() < 0.8 else \
            [rng.choice((1, 3) if spatial < 3 else (1, 2, 3)) for _ in range(spatial)]
        dilation = [rng.choice((1, 1, 1, 2))] * spatial
        stride = [rng.choice((1, 1, 2))] * spatial
        padding = [rng.choice((0, kk // 2, kk // 2)) for kk in kernel]
        largest = {1: 512, 2: 48, 3: 16}[spatial]
        sizes = [rng.randint(d * (kk - 1) + 1, largest) for kk, d in zip(kernel, dilation)]
        return kernel, stride, padding, dilation, sizes

    def channels(self, spatial):
        """(channels C, features F, groups G): one group mostly, else a
        depthwise convolution (G == C == F) or a grouped one (G dividing
        both; C/G and F/G are 1 at times, the grouped form all the same);
        a 3-D convolution one group only, of at most 16 channels."""
        rng = self.rng
        if spatial == 3:
            return rng.randint(1, 16), rng.randint(1, 32), 1
        r = rng.random()
        if r < 0.6:
            return rng.randint(1, 32), rng.randint(1, 32), 1
        if r < 0.75:
            c = rng.randint(2, 32)
            return c, c, c
        g = rng.randint(2, 8)
        return g * rng.randint(1, 32 // g), g * rng.randint(1, 32 // g), g

    def draw(self, size=None):
        rng = self.rng
        self.used = []
        transposed = [k for k in TRANSPOSED if k in self.kinds]
        if transposed and rng.random() < TRANSPOSED_SHARE:
            # Mostly 2-D, as models use them (upsampling images).
            kind = rng.choices(transposed, [3 if k == "conv_transpose2d" else 1
                                            for k in transposed])[0]
            return self.draw_transposed(int(kind[-2]))
        planar = [k for k in self.kinds if k not in ("conv3d",) + TRANSPOSED]
        kind = "conv3d" if "conv3d" in self.kinds and \
            (not planar or rng.random() < CONV3D_SHARE) else rng.choice(planar)
        spatial = int(kind[4])
        kernel, stride, padding, dilation, sizes = self.window(spatial)
        channels, features, groups = self.channels(spatial)
        form = "dense" if groups == 1 else \
            "depthwise" if channels == features == groups else "grouped"
        self.dtype = self.compute_dtype = rng.choice(
            ("float32", "float32", "float16", "bfloat16") if form == "dense" else ("float32",))
        n = rng.randint(1, 4 if spatial < 3 else 2)
        b = _Builder()
        x = self.new_input(b, (n, channels) + tuple(sizes))
        if rng.random() < 0.5:
            x = self.unary(b, x)
        v = self.convolve(b, x, (kernel, stride, padding, dilation), features, groups)
        self.used.append(kind)
        self.shape = v.shape
        return self.finish(b, v)

    def convolve(self, b, x, window, features, groups):
        """`x` ([N, C, *S], a builder's value; `b` a _Builder) convolved
        with a new weight of `features` filters in `groups` groups, a bias
        half the time, over (kernel, stride, padding, dilation) `window`,
        in the grammar's dtype, as the compiler renders it."""
        rng = self.rng
        kernel, stride, padding, dilation = window
        spatial = x.rank - 2
        channels = x.shape[1]
        form = "dense" if groups == 1 else \
            "depthwise" if channels == features == groups else "grouped"
        half = self.dtype != "float32"
        view_groups = groups if form == "grouped" else 1  # G of the [N, G, F/G, *S] views
        w = b.input((features, channels // groups) + tuple(kernel), self.dtype)
        if half:  # a result that half precision holds
            limit = math.sqrt(HALF_RESULT / (channels * math.prod(kernel)))
            x, w = self.squash(b, x, limit), self.squash(b, w, limit)
        bias = b.input((features,), self.dtype) if rng.random() < 0.5 else None
        if spatial == 1:  # the 2-D convolution of [N, C, L, 1] views
            kernel, stride, padding, dilation = (kernel + [1], stride + [1], padding + [0],
                                                 dilation + [1])
        padded = [s + 2 * p for s, p in zip(x.shape[2:] + (1,) * (spatial == 1), padding)]
        out_shape = (x.shape[0], features) + window_sizes(padded, kernel, stride, dilation)
        # The order the compiler renders them in: a grouped convolution's
        # input view (unless a pad reads it) and weight view come after the
        # bias (it views them again where it lowers the convolution itself),
        # a depthwise one's weight view too.
        early_input = form != "grouped" or any(padding)
        if early_input:
            x = self.input_view(b, x, spatial, padding)
        if spatial == 1 and form == "dense":
            w = b.reshape(w, w.shape + (1,))
        if bias is not None:
            bias = self.bias_view(b, widened(b, bias), out_shape, view_groups)
        if not early_input:
            x = self.input_view(b, x, spatial, padding)
        if spatial == 1 and form != "dense":
            w = b.reshape(w, w.shape + (1,))
        # A half-precision convolution is a float32 one of casts, cast back.
        w, x = widened(b, w), widened(b, x)
        bound = x.bound * w.bound * (channels // groups) * math.prod(kernel)
        v = b.conv(x, w, stride, dilation, groups, lo=-bound, hi=bound)
        v = self.result(b, v, bias, spatial, view_groups)
        if half:
            v = b.op("to", [v], dtype=self.dtype, lo=v.lo, hi=v.hi)
        # A 2-D grouped result without a bias is read through the folded
        # [N, G, F/G, *S] view, which the compiler propagates through the
        # epilogue: an operand spanning the F channels is then viewed once
        # for every op that reads it.
        if form == "grouped" and bias is None and spatial == 2:
            b.share_lifts = features
        return v

    def draw_transposed(self, spatial=2):
        """`F.conv_transpose{1,2,3}d(x, w, b, stride, padding,
        output_padding)` (one group, a bias half the time, no dilation) as
        the compiler renders it: a convolution of stride 1 over x spread out
        into zeros (`stride - 1` between elements, `k - 1 - padding` before,
        that and the output padding after: one strided write into a zero
        tensor, which the compiler folds a printed program's write a dim
        back into), with w's in and out channels swapped and its window
        reversed, the bias spread over the result and added first."""
        rng = self.rng
        self.dtype = self.compute_dtype = "float32"
        kernel = [rng.choice((2, 3, 3, 4, 5))] * spatial if rng.random() < 0.8 else \
            [rng.choice((2, 3, 4)) for _ in range(spatial)]
        stride = [rng.choice((1, 2, 2, 3))] * spatial
        padding = [rng.randint(0, k - 1) for k in kernel]
        extra = [rng.randint(0, s - 1) if rng.random() < 0.3 else 0 for s in stride]
        # The result's size (n - 1) * stride - 2 * padding + k at least 1.
        largest = {1: 128, 2: 32, 3: 8}[spatial]
        sizes = [rng.randint(max(1, 1 - (k - 1 - 2 * p) // s), largest) for k, p, s in
                 zip(kernel, padding, stride)]
        # At least 2 of each: an arange of one element folds away.
        channels, features = rng.randint(2, 32 if spatial < 3 else 8), \
            rng.randint(2, 32 if spatial < 3 else 8)
        n = rng.randint(1, 4 if spatial < 3 else 2)
        b = ProgramBuilder()
        x = self.new_input(b, (n, channels) + tuple(sizes))
        if rng.random() < 0.5:
            x = self.unary(b, x)
        w = b.input((channels, features) + tuple(kernel), "float32")
        w = transposed_weight(b, w)
        spread = [(size - 1) * s + 1 + 2 * (k - 1 - p) + e for size, s, k, p, e in
                  zip(sizes, stride, kernel, padding, extra)]
        if spread != sizes:  # one strided write into zeros, all dims at once
            x = b.insert_slice(x, b.full(0.0, x.shape[:2] + tuple(spread), "float32"),
                               [0, 0] + [k - 1 - p for k, p in zip(kernel, padding)],
                               [1, 1] + stride)
        bound = x.bound * w.bound * channels * math.prod(kernel)
        out_shape = (n, features) + tuple(s - k + 1 for s, k in zip(x.shape[2:], kernel))
        bias = self.bias_view(b, b.input((features,), "float32"), out_shape, 1) \
            if rng.random() < 0.5 else None
        v = b.conv(x, w, [1] * spatial, [1] * spatial, lo=-bound, hi=bound)
        v = self.result(b, v, bias, spatial, 1)
        self.used.append(f"conv_transpose{spatial}d")
        self.shape = v.shape
        return self.finish(b, v)

    @staticmethod
    def input_view(b, x, spatial, padding):
        """The convolution's input: a 1-D one's [N, C, L, 1] view, padded."""
        if spatial == 1:
            x = b.reshape(x, x.shape + (1,))
        if any(padding):
            x = b.pad(x, [0, 0] + padding, [0, 0] + padding, 0.0)
        return x

    @staticmethod
    def bias_view(b, bias, out_shape, groups):
        """The bias as the compiler adds it: `[1, F, 1, 1]` expanded to the
        result, in the grouped form viewed as `[N, G, F/G, *S]`."""
        features = out_shape[1]
        v = b.expand(b.reshape(bias, (1, features) + (1,) * (len(out_shape) - 2)), out_shape)
        return v if groups == 1 else b.reshape(v, grouped_view(out_shape, groups))

    @staticmethod
    def result(b, v, bias, spatial, groups):
        """The convolution `v` with its bias added, viewed back to a 1-D
        convolution's [N, F, L] (`groups`: the grouped form's, else 1)."""
        final = v.shape[:3] if spatial == 1 else v.shape
        if bias is not None and groups > 1:
            v = b.reshape(v, grouped_view(v.shape, groups))
        if bias is not None:
            v = b.op("add", [bias, v], lo=v.lo - bias.bound, hi=v.hi + bias.bound)
        if v.shape != final:
            return b.reshape(v, final)
        if groups > 1:  # the folded view of a grouped result, kept where returned
            b.viewed = v.key
        return v


def grouped_view(shape, groups):
    """[N, F, *S] as [N, G, F/G, *S]."""
    return (shape[0], groups, shape[1] // groups) + tuple(shape[2:])


def transposed_weight(b, w):
    """A transposed convolution's weight [C, F, *K] as the convolution's
    [F, C, *K], its window reversed: w indexed by aranges, as the compiler
    renders it (the reversed window dims first)."""
    rank = w.rank
    channels, features, *kernel = w.shape
    window = []
    for d, k in enumerate(kernel, start=2):
        tap = b.arange_along(rank, d, k, shared=False)
        last = b.full(k - 1, (1,) * rank, "int64")
        window.append(b.op("sub", [last, tap], lo=0, hi=k - 1))
    return b.index(w, [b.arange_along(rank, 1, channels, shared=False),
                       b.arange_along(rank, 0, features, shared=False)] + window)


def widened(b, v):
    """A half-precision value cast to float32 (a float32 one as it is)."""
    return v if v.dtype == "float32" else b.op("to", [v], dtype="float32", lo=v.lo, hi=v.hi)
