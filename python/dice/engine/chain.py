"""The chain grammar: two or more main ops in sequence, as the layers of a
model follow one another, each drawn by its own family's grammar to fit
the value before it, with elementwise productions between (an activation
mostly, a residual, a scale):

- on an image `[N, C, *S]` (one or two spatial dims): a convolution (one
  group or depthwise), max or average pooling, a batch or group norm, the
  mean over the spatial dims (global average pooling, to features
  `[N, C]`), a flatten to features `[N, C * S]`, or a squeeze-and-excitation
  gate (the image times a per-channel sigmoid of two linears of its mean);
- on features `[..., D]` (rank 2 or 3): a linear, a layer or RMS norm, a
  softmax or log-softmax, or (rank 3, `[B, L, D]`) self-attention of one
  head or several: q, k and v linears of the value (viewed as `[B, H, L,
  d]` heads), the attention family's `softmax(q @ k^T * scale + masks) @ v`,
  and an output linear (of the heads viewed back as `[B, L, H * d]`).

Float32 only. Each main op is rendered exactly as its family's grammar
renders it alone (the compiler's canonical form); where the compiler folds
what two layers meet (a reshape of a reshape), the builder folds it too.
The emitter is dice.engine.emit_chain: a stage a main op.
"""

import math

from dice.engine.attention import AttentionGrammar
from dice.engine.convolution import ConvolutionGrammar, _Builder
from dice.engine.elementwise import Grammar
from dice.engine.emit_chain import emit, stages_of
from dice.engine.emit_host import Unsupported, declaration
from dice.engine.matmul import MatmulGrammar
from dice.engine.normalization import NormalizationGrammar
from dice.engine.pooling import PoolingGrammar
from dice.engine.program import Value, window_sizes
from dice.engine.reduction import ReductionGrammar
from dice.engine.shapes import draw_size

IMAGE_STEPS = ("conv", "conv", "conv", "pool", "pool", "norm", "mean", "flatten", "gate")
FEATURE_STEPS = ("linear", "linear", "linear", "norm", "attention")
# Not instance norm: its statistics are float64 sums, and the layer after
# it would read one from a buffer (the stages' emitters store float32).
IMAGE_NORMS = ("batch_norm", "group_norm")
FEATURE_NORMS = ("layer_norm", "rms_norm", "softmax", "log_softmax")
# What a float32 value may hold before a main op or a production: a
# bound on its magnitude over every trial input (inputs up to 100 each), so
# far above what a layer's values come to in practice; a tighter one would
# scale values between layers down to nothing.
FLOAT_BOUND = 1e9
# What follows a layer most of the time: an activation.
ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "leaky_relu", "elu",
               "selu", "celu", "hardtanh", "relu6", "softplus", "mish", "hardswish",
               "hardsigmoid", "logsigmoid", "swish_beta")
ACTIVATION_SHARE = 0.7
# The most elements a step may make, so that a chain stays a layer's size.
MAX_ELEMENTS = 1 << 22


class _ChainBuilder(_Builder):
    """A builder whose reshape of a reshape is one reshape of the first
    one's operand, and no op where it gives that operand's own shape back,
    as the compiler folds them: a linear's reshape back to [B, T, N] meets
    the next linear's reshape to rows, a 1-D convolution's view back meets
    a 1-D pool's view. A permute of a permute is one permute too (the heads'
    view of k, transposed for the scores)."""

    def permute(self, value, dims):
        node = self._nodes[value.key]
        if node.fn == "permute":
            inner = node.attrs["ints"]["dims"]
            source = self._nodes[node.args[0]]
            value = Value(node.args[0], source.shape, source.dtype, value.lo, value.hi,
                          value.exact)
            dims = tuple(inner[d] for d in dims)
            if dims == tuple(range(len(dims))):
                return value
        return super().permute(value, dims)

    def reshape(self, value, shape, shared=True):
        node = self._nodes[value.key]
        if node.fn == "reshape":
            source = self._nodes[node.args[0]]
            value = Value(node.args[0], source.shape, source.dtype, value.lo, value.hi,
                          value.exact)
            if tuple(shape) == source.shape:
                return value
        return super().reshape(value, shape, shared)


class ChainGrammar(Grammar):
    def __init__(self, rng, exclude=(), max_elements=MAX_ELEMENTS):
        super().__init__(rng, exclude)
        self.exclude = set(exclude)
        self.max_elements = max_elements
        # The families' grammars, sharing this one's generator.
        self.parts = {"conv": ConvolutionGrammar(rng, exclude),
                      "pool": PoolingGrammar(rng, exclude),
                      "norm": NormalizationGrammar(rng, exclude),
                      "linear": MatmulGrammar(rng, exclude),
                      "mean": ReductionGrammar(rng, exclude),
                      "attention": AttentionGrammar(rng, exclude)}
        # A step named by an excluded production is never drawn.
        self.image_steps = [s for s in IMAGE_STEPS if s not in exclude]
        self.image_norms = [n for n in IMAGE_NORMS if n not in exclude]
        self.feature_norms = [n for n in FEATURE_NORMS if n not in exclude]
        self.pools = [k for k in ("max_pool", "avg_pool") if k not in exclude]
        self.activations = [a for a in ACTIVATIONS if a in self.unaries]

    def limit(self, v):
        return FLOAT_BOUND

    def draw(self, size=None):
        """A program of at least two stages (a batch norm is elementwise:
        it makes none) that the chain emitter writes, and the productions
        drawn."""
        for _ in range(100):
            program, used = self._draw()
            if len(stages_of(program)) < 2:
                continue
            try:
                emit(program, declaration(program))
            except Unsupported:
                continue
            return program, used
        raise RuntimeError("no chain the chain emitter writes in 100 draws")

    def _draw(self):
        rng = self.rng
        self.used = []
        self.dtype = self.compute_dtype = "float32"
        for part in self.parts.values():  # one record of what is drawn
            part.used, part.dtype, part.compute_dtype = self.used, "float32", "float32"
        b = _ChainBuilder()
        self.image = rng.random() < 0.5
        while True:
            if self.image:
                spatial = rng.choice((1, 2, 2))
                sizes = tuple(draw_size(rng, 256 if spatial == 1 else 40)
                              for _ in range(spatial))
                shape = (rng.randint(2, 8), draw_size(rng, 32)) + sizes
            else:
                lead = (draw_size(rng, 256),) if rng.random() < 0.5 else \
                    (draw_size(rng, 16), draw_size(rng, 128))
                shape = lead + (draw_size(rng, 512),)
            if math.prod(shape) <= self.max_elements:
                break
        self.shape = shape
        v = self.new_input(b, shape)
        pool = [v]
        if rng.random() < 0.3:
            v = self.unary(b, v)
            pool.append(v)
        for n in range(rng.choice((2, 2, 3, 3, 4))):
            if n:  # between two layers: an activation mostly, a residual at times
                for _ in range(rng.choice((0, 1, 1, 2))):
                    v = self.between(b, v, pool)
                    pool.append(v)
            v = self.step(b, self.squash(b, v, self.limit(v)))
            self.shape = v.shape
            pool = [v]
        return self.finish(b, v)

    def between(self, b, v, pool):
        """A production between two layers: an activation mostly, else any
        unary function or a binary op (a residual, a bias, a scale)."""
        rng = self.rng
        if rng.random() < 0.6:
            name = rng.choice(self.activations) if self.activations and \
                rng.random() < ACTIVATION_SHARE else None
            return self.unary(b, v, name)
        return self.binary(b, v, pool)

    def step(self, b, v):
        """One main op that fits `v` (an image or features), or where none
        of 20 draws fits, a flatten or a softmax."""
        steps = self.image_steps if self.image else FEATURE_STEPS
        for _ in range(20):
            out = getattr(self, f"_{self.rng.choice(steps)}")(b, v)
            if out is not None:
                return out
        return self._flatten(b, v) if self.image else self._norm(b, v, ["softmax"])

    # --- on an image [N, C, *S] ---------------------------------------------------
    def _conv(self, b, v):
        """A convolution of one group or depthwise (a grouped one's folded
        view reaches past its own layer in the compiler's rendering)."""
        rng = self.rng
        spatial = v.rank - 2
        k = rng.choice((1, 3, 3, 5, 7) if spatial == 1 else (1, 3, 3, 3, 5))
        kernel = [k] * spatial
        dilation = [rng.choice((1, 1, 1, 2))] * spatial
        stride = [rng.choice((1, 1, 2))] * spatial
        padding = [rng.choice((0, k // 2, k // 2))] * spatial
        channels = v.shape[1]
        if channels > 1 and rng.random() < 0.2:
            features = groups = channels
        else:
            features, groups = draw_size(rng, 64), 1
        padded = [s + 2 * p for s, p in zip(v.shape[2:], padding)]
        out = window_sizes(padded, kernel, stride, dilation)
        if min(out) < 1 or v.shape[0] * features * math.prod(out) > self.max_elements:
            return None
        out = self.parts["conv"].convolve(b, v, (kernel, stride, padding, dilation),
                                          features, groups)
        self.used.append(f"conv{spatial}d")
        return out

    def _pool(self, b, v):
        if not self.pools:
            return None
        kind = self.rng.choice(self.pools)
        kernel, stride, padding, dilation, _ = self.parts["pool"].window(kind, v.rank - 2)
        padded = [s + 2 * p for s, p in zip(v.shape[2:], padding)]
        if min(window_sizes(padded, kernel, stride, dilation)) < 1:
            return None
        out = self.parts["pool"].pool(b, v, kind, (kernel, stride, padding, dilation))
        self.used.append(kind)
        return out

    def _mean(self, b, v):
        """The mean over the spatial dims (global average pooling): features."""
        if math.prod(v.shape[2:]) < 2:  # the compiler folds a mean of one element away
            return None
        dims = list(range(2, v.rank))
        out = self.parts["mean"].reduce(b, "mean", v, dims, keepdim=False)
        self.used.append("mean")
        self.image = False
        return out

    def _gate(self, b, v):
        """Squeeze and excitation: `v * sigmoid(fc2(relu(fc1(mean(v)))))`,
        the gate viewed as `[N, C, 1, ..]`: three main ops whose last result
        is not of the program's shape."""
        rng = self.rng
        channels = v.shape[1]
        if math.prod(v.shape[2:]) < 2:  # the compiler folds a mean of one element away
            return None
        s = self.parts["mean"].reduce(b, "mean", v, list(range(2, v.rank)), keepdim=False)
        self.used.append("mean")
        s = self.parts["linear"].linear(b, s, max(1, channels // rng.choice((1, 2, 4, 8))))
        s = self.unary(b, s, rng.choice(("relu", "silu")))
        s = self.parts["linear"].linear(b, s, channels)
        s = self.unary(b, s, rng.choice(("sigmoid", "hardsigmoid")))
        s = b.reshape(s, (v.shape[0], channels) + (1,) * (v.rank - 2))
        return b.op("mul", [v, s], lo=-v.bound, hi=v.bound)

    def _flatten(self, b, v):
        """[N, C, *S] as [N, C * S]: features."""
        self.image = False
        return b.reshape(v, (v.shape[0], math.prod(v.shape[1:])))

    # --- on features [..., D] or an image -----------------------------------------
    def _norm(self, b, v, kinds=None):
        kinds = kinds or (self.image_norms if self.image else self.feature_norms)
        kinds = [k for k in kinds if self._norm_fits(k, v.shape)]
        if not kinds:
            return None
        kind = self.rng.choice(kinds)
        out = self.parts["norm"].norm(b, kind, v)
        self.used.append(kind)
        return out

    @staticmethod
    def _norm_fits(kind, shape):
        if kind == "group_norm":  # of a 2-D image: the compiler does not raise one
            # that reads a 1-D convolution's view back (it renders torch's
            # decomposition there); a group of one channel has 2 values or more
            return len(shape) == 4 and shape[1] <= 512 and math.prod(shape[2:]) >= 2
        if kind == "batch_norm":
            return shape[1] >= 2
        return shape[-1] > 1

    def _attention(self, b, v):
        """Self-attention over `[B, L, D]`: projections to a width of
        16-128, the attention, a projection back to D; of one head, or 40%
        of the time of H heads (2-8) of that width each, the projections
        viewed as `[B, H, L, d]` and the heads' values back as `[B, L, H * d]`
        (`x.view(B, L, H, d).transpose(1, 2)` and back)."""
        if v.rank != 3 or "attention" in self.exclude:
            return None
        rng = self.rng
        batch, length, features = v.shape
        width = rng.choice((16, 32, 64, 64, 128))
        heads = rng.choice((2, 4, 8)) if rng.random() < 0.4 else 1
        inner = heads * width
        if batch * heads * length * max(length, width) > self.max_elements or \
                batch * length * max(inner, features) > self.max_elements or \
                features * inner > self.max_elements:
            return None
        q, k, values = (self.parts["linear"].linear(b, v, inner) for _ in range(3))
        if heads > 1:
            q, k, values = (b.permute(b.reshape(x, (batch, length, heads, width)), (0, 2, 1, 3))
                            for x in (q, k, values))
        out = self.parts["attention"].attend(b, q, k, values)
        if heads > 1:
            out = b.reshape(b.permute(out, (0, 2, 1, 3)), (batch, length, inner))
            self.used.append("multi_head")
        self.used.append("attention")
        return self.parts["linear"].linear(b, out, features)

    def _linear(self, b, v):
        n = draw_size(self.rng, 1024)
        if max(math.prod(v.shape[:-1]), v.shape[-1]) * n > self.max_elements:
            return None  # a result or a weight larger than a layer's
        return self.parts["linear"].linear(b, v, n)
