"""The CUDA kernel for a program with one convolution (no padding of its
own, one group) and elementwise ops around it: one output element a thread
(grid-stride), the input channels and the window walked in registers, the
prologue fused into each input read (a padded read only inside the input,
zero outside), float32 accumulation, the bias and epilogue fused into the
store."""

import math

from dice.engine.emit_host import Unsupported, element_launch, one_kernel_source
from dice.engine.emit_reduction import ValueEmitter


class _Emitter(ValueEmitter):
    def __init__(self, program):
        super().__init__(program)
        self.conv = self.main_op(("conv",), "convolutions")
        op = self.op(self.conv)
        if op["ints"]["groups"] != [1] or any(op["ints"]["padding"]):
            raise Unsupported("a grouped or padding convolution")
        self.out = self.shape(self.conv)
        for o in program["outputs"]:
            if math.prod(self.shape(o)) != math.prod(self.out):
                raise Unsupported("a result not of the convolution's elements")

    def window_loop(self, coords):
        """Loops over the input channels and the window at output `coords`
        (n, f, spatial...), accumulating input times weight."""
        op = self.op(self.conv)
        x, w = op["args"]
        ints = op["ints"]
        kernel = self.shape(w)[2:]
        channels = self.shape(w)[1]
        source, taps, loops = self.window(coords[2:], kernel, ints["stride"],
                                          ints["dilation"], "k")
        channel = "c" if channels > 1 else "0"
        source, taps = [coords[0], channel] + source, [channel] + taps
        if channels > 1:
            loops.insert(0, f"for (int c = 0; c < {channels}; ++c)")
        self.new_scope()
        xv = self.value(x, source)
        wv = self.value(w, [coords[1]] + taps)
        return self.nested(loops, self.lines + [f"acc += {xv} * {wv};"])

    def kernel(self, in_params, out_params, out_dtypes):
        return self.element_kernel(
            "conv_kernel",
            "// One output element a thread, grid-stride; channels and window in registers.",
            in_params + out_params, self.out, out_dtypes,
            lambda names: ["    float acc = 0.0f;"] + self.window_loop(names))


def emit(program, signature):
    """The CUDA source (kernels and `dice_forward` with exactly `signature`)
    computing `program`. Raises Unsupported for programs it does not take."""
    return one_kernel_source(program, signature, _Emitter(program).kernel,
                             element_launch("conv_kernel"))
