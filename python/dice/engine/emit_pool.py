"""The CUDA kernel for a program with one pool (`max_pool`, or `sum_pool`
of an average) and elementwise ops around it: one output element a thread
(grid-stride), its window walked in registers with the prologue fused into
each read (a padded read only inside the input, the pad value outside),
max with NaN propagating as PyTorch's, a half-precision sum accumulated in
float32 and rounded once, the epilogue fused into the store."""

import math

from dice.engine.emit_elementwise import ROUND
from dice.engine.emit_host import Unsupported, element_launch, one_kernel_source
from dice.engine.emit_reduction import ValueEmitter

POOLS = ("max_pool", "sum_pool")


class _Emitter(ValueEmitter):
    def __init__(self, program):
        super().__init__(program)
        self.pool = self.main_op(POOLS, "pools")
        self.out = self.shape(self.pool)
        for o in program["outputs"]:
            if math.prod(self.shape(o)) != math.prod(self.out):
                raise Unsupported("a result not of the pool's elements")

    def window_loop(self, coords):
        """Loops over the pool's window at output `coords`, accumulating."""
        op = self.op(self.pool)
        ints = op["ints"]
        kernel, stride = ints["kernel"], ints["stride"]
        dilation = ints.get("dilation", [1] * len(kernel))
        lead = len(self.out) - len(kernel)
        source, _, loops = self.window(coords[lead:], kernel, stride, dilation, "w")
        source = list(coords[:lead]) + source
        self.new_scope()
        name = self.value(op["args"][0], source)
        if op["fn"] == "max_pool":
            combine = f"acc = ({name} > acc || {name} != {name}) ? {name} : acc;"
        else:
            combine = f"acc += {name};"
        return self.nested(loops, self.lines + [combine])

    def kernel(self, in_params, out_params, out_dtypes):
        op = self.op(self.pool)
        dtype = self.types[self.pool]["dtype"]

        def middle(names):
            identity = "-INFINITY" if op["fn"] == "max_pool" else "0"
            lines = [f"    {self.c_type(self.pool)} acc = {identity};"]
            lines += self.window_loop(names)
            if op["fn"] == "sum_pool" and dtype in ROUND:
                lines.append(f"    acc = {ROUND[dtype]}(acc);")
            return lines

        return self.element_kernel(
            "pool_kernel", "// One output element a thread, grid-stride; the window in registers.",
            in_params + out_params, self.out, out_dtypes, middle)


def emit(program, signature):
    """The CUDA source (kernels and `dice_forward` with exactly `signature`)
    computing `program`. Raises Unsupported for programs it does not take."""
    return one_kernel_source(program, signature, _Emitter(program).kernel,
                             element_launch("pool_kernel"))
