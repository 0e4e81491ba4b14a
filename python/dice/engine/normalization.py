"""The normalization grammar: softmax and log-softmax along any dim, layer
norm over the last 1-2 dims and RMS norm over the last dim, with or
without weight and bias, group norm (any group count dividing the
channels, ranks 3-5, with weight and bias), batch norm in eval mode
(running statistics, ranks 2-5, weight and bias or not), instance norm
(ranks 3-5, weight and bias or not), an elementwise
prologue (0-1 productions) and an epilogue (0-2, an activation after a
norm among them).

These are the functions the compiler raises back from torch-mlir's
decompositions (docs/reference-program.md, "Raised functions"), so each is
one op of the reference program; what it does not raise is not drawn: a
half-precision layer norm, a half-precision norm's weight and bias. Batch
norm is the exception: in eval mode it is elementwise, so the compiler
keeps torch's decomposition, a per-channel scale and shift. Instance norm
is the other: the compiler does not raise it, so the grammar draws its
decomposition, a program of reductions."""

import math
import struct
from dataclasses import replace

from dice.engine.elementwise import Grammar
from dice.engine.program import FLOATS, ProgramBuilder
from dice.engine.shapes import draw_shape

NORMS = ("softmax", "log_softmax", "layer_norm", "rms_norm", "group_norm", "batch_norm",
         "instance_norm")


class NormalizationGrammar(Grammar):
    def __init__(self, rng, exclude=()):
        super().__init__(rng, exclude)
        self.norms = [n for n in NORMS if n not in exclude]

    def group_norm(self, b, v):
        """`F.group_norm(v, G, weight, bias)` as the compiler renders it:
        weight and bias as `[1, G, C/G, 1]` views (torch-mlir's layout), a
        half-precision input, weight and bias cast to float32 first and the
        result cast back."""
        rng = self.rng
        channels = v.shape[1]
        groups = rng.choice([g for g in range(1, channels + 1) if channels % g == 0])
        half = v.dtype != "float32"
        if half:
            v = b.op("to", [v], dtype="float32", lo=v.lo, hi=v.hi)
        params = []
        for _ in range(2):
            p = b.reshape(b.input((channels,), self.dtype), (1, groups, channels // groups, 1))
            params.append(b.op("to", [p], dtype="float32", lo=p.lo, hi=p.hi) if half else p)
        eps = rng.choice((1e-5, 1e-6))
        out = b.op("group_norm", [v] + params, lo=-500.0, hi=500.0, value=eps,
                   shaped_like_first=True, ints={"groups": [groups]})
        return b.op("to", [out], dtype=self.dtype, lo=out.lo, hi=out.hi) if half else out

    def batch_norm(self, b, v):
        """`F.batch_norm(v, mean, var, weight, bias, training=False)` as
        the compiler renders it: (v - mean) * (1 / sqrt(var + eps)), then
        the weight and the bias, every statistic a vector viewed along dim
        1 where it meets v; a half-precision one in float32 between casts.
        The variance is kept positive as a running variance is (abs + 1).
        The constants take the form the compiler gives the printed program
        (float32 vectors of one element), so the program is its own
        reference."""
        rng = self.rng
        channels = v.shape[1]
        view = (1, channels) + (1,) * (v.rank - 2)
        half = v.dtype != "float32"

        def statistic(domain=None, cast=half):
            s = b.input((channels,), v.dtype)
            s = self.into_domain(b, domain, s) if domain else s
            s = b.op("to", [s], dtype="float32", lo=s.lo, hi=s.hi) if cast else s
            return replace(s, lift=view)

        mean, var = statistic(), statistic("rsqrt")
        eps = struct.unpack("f", struct.pack("f", rng.choice((1e-5, 1e-4, 1e-3))))[0]
        eps, one = (b.full(c, (1,), "float32") for c in (eps, 1.0))
        root = b.op("sqrt", [b.op("add", [var, eps])], lo=1.0, hi=math.sqrt(var.hi + 1))
        inverse = b.op("div", [one, root], lo=0.0, hi=1.0)
        if half:
            v = b.op("to", [v], dtype="float32", lo=v.lo, hi=v.hi)
        centred = b.op("sub", [v, mean], lo=v.lo - mean.bound, hi=v.hi + mean.bound)
        bound = centred.bound
        out = b.op("mul", [centred, replace(inverse, lift=view)], lo=-bound, hi=bound)
        affine = rng.choice(("both", "both", "both", "weight", "none"))
        for fn in ("mul", "add")[:{"both": 2, "weight": 1, "none": 0}[affine]]:
            p = statistic(cast=False)  # float32 * half promotes: no cast
            bound = bound * p.bound if fn == "mul" else bound + p.bound
            out = b.op(fn, [out, p], lo=-bound, hi=bound)
        return b.op("to", [out], dtype=self.dtype, lo=out.lo, hi=out.hi) if half else out

    def instance_norm(self, b, v):
        """`F.instance_norm(v, weight=..., bias=...)` as the compiler renders
        torch's decomposition (a batch norm in training mode over the
        `[1, N*C, *S]` view): the variance a biased two-pass float64 sum,
        the mean a float32 sum, both over the spatial dims, then
        `(v - mean) * rsqrt(var + eps)` (eps a float32 constant), the
        weight and the bias, and the view back; a half-precision input in
        float32 between casts. The weight and bias are `[N*C, 1, ...]`
        inputs: torch repeats the module's per-channel ones over the batch,
        outside the request. This is the printed program's own rendering
        (the module's first rendering casts eps from float64 and a half
        input twice; its printed program is rendered as here)."""
        rng = self.rng
        shape = v.shape
        rows, spatial = shape[0] * shape[1], shape[2:]
        count = float(math.prod(spatial))
        view = (1, rows) + spatial
        kept = (1, rows) + (1,) * len(spatial)
        dims = [0] + list(range(2, len(view)))
        half = v.dtype != "float32"

        def spatial_mean(value, lo, hi):  # kept: a sum and a division by the count
            total = b.reshape(b.reduce("sum", value, dims), kept)
            return b.op("div", [total, b.scalar(count, value.dtype)], lo=lo, hi=hi)

        flat = b.reshape(v, view)
        x = b.op("to", [flat], dtype="float32", lo=v.lo, hi=v.hi) if half else flat
        wide = b.op("to", [x], dtype="float64", lo=v.lo, hi=v.hi)
        dev = b.op("sub", [wide, spatial_mean(wide, v.lo, v.hi)])
        var = spatial_mean(b.op("mul", [dev, dev]), 0, v.bound ** 2)
        var = b.op("to", [var], dtype="float32", lo=0, hi=v.bound ** 2)
        mean = spatial_mean(x, v.lo, v.hi)
        eps = struct.unpack("f", struct.pack("f", rng.choice((1e-5, 1e-6, 1e-3))))[0]
        eps = b.full(eps, (1,) * len(view), "float32")
        inverse = b.op("rsqrt", [b.op("add", [var, eps])], lo=0.0, hi=1e3)
        bound = math.sqrt(count)
        out = b.op("mul", [b.op("sub", [x, mean]), inverse], lo=-bound, hi=bound)
        if rng.random() < 0.6:  # affine
            for fn in ("mul", "add"):
                p = b.reshape(b.input((rows,) + (1,) * len(spatial), v.dtype), kept)
                if half:
                    p = b.op("to", [p], dtype="float32", lo=p.lo, hi=p.hi)
                bound = bound * p.bound if fn == "mul" else bound + p.bound
                out = b.op(fn, [out, p], lo=-bound, hi=bound)
        if half:
            out = b.op("to", [out], dtype=v.dtype, lo=out.lo, hi=out.hi)
        return b.reshape(out, shape)

    def norm(self, b, kind, v):
        rng = self.rng
        shape = v.shape
        if kind == "instance_norm":
            return self.instance_norm(b, v)
        if kind == "group_norm":
            return self.group_norm(b, v)
        if kind == "batch_norm":
            return self.batch_norm(b, v)
        if kind in ("softmax", "log_softmax"):
            dim = rng.choice([d for d, s in enumerate(shape) if s > 1] or [len(shape) - 1])
            hi = 1.0 if kind == "softmax" else 0.0
            return b.op(kind, [v], lo=-v.bound * 2 - 30 if hi == 0 else 0, hi=hi,
                        ints={"dim": [dim]})
        k = rng.choice((1, 2)) if kind == "layer_norm" and len(shape) > 1 else 1
        trailing = shape[-k:]
        args = [v]
        affine = [0, 0]
        if v.dtype == "float32" and rng.random() < 0.6:
            affine[0] = 1
            args.append(b.input(trailing, v.dtype))
            if kind == "layer_norm" and rng.random() < 0.7:
                affine[1] = 1
                args.append(b.input(trailing, v.dtype))
        eps = rng.choice((1e-5, 1e-6)) if kind == "layer_norm" else rng.choice((1e-6, 1e-5))
        bound = 4.0 * (1 + 100.0 * affine[0]) + 100.0 * affine[1]
        return b.op(kind, args, lo=-bound, hi=bound, value=eps, shaped_like_first=True,
                    ints={"normalized": [k], "affine": affine})

    def draw(self, size=None):
        rng = self.rng
        self.used = []
        kind = rng.choice(self.norms)
        self.dtype = self.compute_dtype = "float32" if kind == "layer_norm" else \
            rng.choice(FLOATS + ("float32",))
        for _ in range(100):
            shape = draw_shape(rng)
            if kind == "group_norm" and (len(shape) < 3 or shape[1] > 512 or
                                         math.prod(shape[1:]) < 2):
                continue
            if kind == "batch_norm" and (len(shape) < 2 or shape[1] < 2):
                continue
            if kind == "instance_norm" and (len(shape) < 3 or math.prod(shape[2:]) < 2):
                continue
            if shape[-1] > 1 and (len(shape) < 2 or shape[-2] > 1):
                break
        self.shape = shape
        b = ProgramBuilder()
        v = self.new_input(b, shape)
        pool = [v]
        if rng.random() < 0.5:
            v = self.unary(b, v) if rng.random() < 0.5 else self.binary(b, v, pool)
            pool.append(v)
        v = self.squash(b, v, self.limit(v))
        self.used.append(kind)
        v = self.norm(b, kind, v)
        pool = [v]
        for _ in range(rng.choice((0, 1, 1, 2))):
            v = self.unary(b, v) if rng.random() < 0.6 else self.binary(b, v, pool)
            pool.append(v)
        return b.build([v]), [u for u in self.used if u != "scale"]
