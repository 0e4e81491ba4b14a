"""The CUDA kernel for a program that moves data (`cat`, `permute`,
`slice`, `pad`, a gather by `index`) with elementwise ops around it: one
output element a thread (grid-stride), whose source element is found from
its coordinates (a cat's operand by the range its coordinate falls in, a
pad's operand only inside it, a gather's source at the coordinates its
indices hold), the prologue fused into the read and the epilogue into the
store."""

from dice.engine.emit_host import Unsupported, element_launch, one_kernel_source
from dice.engine.emit_reduction import ValueEmitter

MOVES = ("cat", "permute", "slice", "pad", "index")


class _Emitter(ValueEmitter):
    def __init__(self, program):
        super().__init__(program)
        fns = {op["fn"] for op in program["ops"]}
        if not fns & set(MOVES):
            raise Unsupported("no data movement")
        self.out = self.shape(program["outputs"][0])
        if any(self.shape(o) != self.out for o in program["outputs"]):
            raise Unsupported("results of different shapes")

    def kernel(self, in_params, out_params, out_dtypes):
        return self.element_kernel(
            "layout_kernel", "// One output element a thread, grid-stride, read where it comes from.",
            in_params + out_params, self.out, out_dtypes, lambda names: [])


def emit(program, signature):
    """The CUDA source (kernels and `dice_forward` with exactly `signature`)
    computing `program`. Raises Unsupported for programs it does not take."""
    return one_kernel_source(program, signature, _Emitter(program).kernel,
                             element_launch("layout_kernel"))
