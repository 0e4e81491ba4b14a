"""The CUDA kernel for a program with one convolution (no padding of its
own) and elementwise ops around it: one output element a thread
(grid-stride), the input channels of its group and the window walked in
registers, the prologue fused into each input read (a padded read only
inside the input, zero outside), float32 accumulation, the bias and
epilogue fused into the store."""

import math

from dice.engine.emit_host import Unsupported, element_launch, one_kernel_source
from dice.engine.emit_reduction import ValueEmitter


class _Emitter(ValueEmitter):
    def __init__(self, program):
        super().__init__(program)
        self.conv = self.main_op(("conv",), "convolutions")
        op = self.op(self.conv)
        if any(op["ints"]["padding"]):
            raise Unsupported("a padding convolution")
        self.out = self.shape(self.conv)
        self.split = {}  # (g, f') coordinates of a grouped view -> the channel f
        for o in program["outputs"]:
            if math.prod(self.shape(o)) != math.prod(self.out):
                raise Unsupported("a result not of the convolution's elements")

    def input_channel(self, feature, channels):
        """The input channel that weight channel `c` of output channel
        `feature` reads: `c` itself with one group, else `c` of the feature's
        group (G groups of F/G features and C/G channels each)."""
        op = self.op(self.conv)
        (groups,) = op["ints"]["groups"]
        c = "c" if channels > 1 else "0"
        if groups == 1:
            return c
        per_group = self.shape(op["args"][1])[0] // groups  # F/G
        group = feature if per_group == 1 else f"{feature} / {per_group}"
        return group if channels == 1 else f"{group} * {channels} + c"

    def window_loop(self, coords):
        """Loops over the input channels (the output channel's group's) and
        the window at output `coords` (n, f, spatial...), accumulating input
        times weight."""
        op = self.op(self.conv)
        x, w = op["args"]
        ints = op["ints"]
        kernel = self.shape(w)[2:]
        channels = self.shape(w)[1]  # C/G
        source, taps, loops = self.window(coords[2:], kernel, ints["stride"],
                                          ints["dilation"], "k")
        channel = "c" if channels > 1 else "0"
        source = [coords[0], self.input_channel(coords[1], channels)] + source
        taps = [channel] + taps
        if channels > 1:
            loops.insert(0, f"for (int c = 0; c < {channels}; ++c)")
        self.new_scope()
        xv = self.value(x, source)
        wv = self.value(w, [coords[1]] + taps)
        return self.nested(loops, self.lines + [f"acc += {xv} * {wv};"])

    def expression(self, v, coords):
        # A grouped convolution's bias is added in the [N, G, F/G, *S] view
        # of the result: reading the sum at the result's channel f splits f
        # into (f / (F/G), f % (F/G)), and reading the bias's own view there
        # merges them back into f itself, not g * (F/G) + f'.
        op = self.op(v)
        (groups,) = self.op(self.conv)["ints"]["groups"]
        if op["fn"] != "reshape" or v in self.leaves or groups == 1:
            return super().expression(v, coords)
        (source,) = op["args"]
        shape, view = self.shape(source), self.shape(v)
        if _grouped_view(shape, view, groups):  # [N, F, *S] -> [N, G, F/G, *S]
            pair = (coords[1], coords[2])
            channel = self.split.get(pair, f"{coords[1]} * {view[2]} + {coords[2]}")
            spatial = _same_spatial(coords[3:], view[3:], shape[2:])
            return self.value(source, [coords[0], channel] + spatial)
        if _grouped_view(view, shape, groups):  # [N, G, F/G, *S] -> [N, F, *S]
            pair = (f"{coords[1]} / {shape[2]}", f"{coords[1]} % {shape[2]}")
            self.split[pair] = coords[1]
            spatial = _same_spatial(coords[2:], view[2:], shape[3:])
            return self.value(source, [coords[0], *pair] + spatial)
        return super().expression(v, coords)

    def kernel(self, in_params, out_params, out_dtypes):
        return self.element_kernel(
            "conv_kernel",
            "// One output element a thread, grid-stride; channels and window in registers.",
            in_params + out_params, self.out, out_dtypes,
            lambda names: ["    float acc = 0.0f;"] + self.window_loop(names))


def _grouped_view(shape, view, groups):
    """Whether `view` is `shape` [N, F, *S] viewed as [N, G, F/G, *S] (a
    1-D convolution's trailing 1 of S on either side or none)."""
    return len(view) >= 3 and len(shape) >= 2 and view[0] == shape[0] and \
        view[1] == groups and \
        view[1] * view[2] == shape[1] and _non_ones(view[3:]) == _non_ones(shape[2:])


def _non_ones(sizes):
    return [s for s in sizes if s != 1]


def _same_spatial(coords, sizes, target):
    """Spatial `coords` of `sizes` as coordinates of `target`, the same
    sizes with 1s added or dropped."""
    kept = iter(c for c, s in zip(coords, sizes) if s != 1)
    return ["0" if s == 1 else next(kept) for s in target]


def emit(program, signature):
    """The CUDA source (kernels and `dice_forward` with exactly `signature`)
    computing `program`. Raises Unsupported for programs it does not take."""
    return one_kernel_source(program, signature, _Emitter(program).kernel,
                             element_launch("conv_kernel"))
