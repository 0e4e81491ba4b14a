"""The CUDA kernel for a program that moves data (`cat`, `permute`,
`slice`, `pad`) with elementwise ops around it: one output element a
thread (grid-stride), whose source element is found from its coordinates
(a cat's operand by the range its coordinate falls in, a pad's operand
only inside it), the prologue fused into the read and the epilogue into
the store."""

from dice.corpus.cuda_common import DTYPES
from dice.engine.emit_host import Unsupported, one_kernel_source, size_expression
from dice.engine.emit_reduction import ValueEmitter, _unravel

MOVES = ("cat", "permute", "slice", "pad")


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
        lines = ["// One output element a thread, grid-stride, read where it comes from.",
                 f"__global__ void layout_kernel({', '.join(in_params + out_params)}) {{",
                 f"  const int64_t n = {size_expression(self.out, wide=True)};",
                 "  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;",
                 "       i += (int64_t)gridDim.x * blockDim.x) {"]
        names = [f"o{d}" for d in range(len(self.out))]
        lines += [f"    const int64_t {name} = {c};"
                  for name, c in zip(names, _unravel("i", self.out))]
        for slot, (o, out_dtype) in enumerate(zip(self.p["outputs"], out_dtypes)):
            self.new_scope()
            value = self.value(o, names)
            lines += [f"    {line}" for line in self.lines]
            lines.append(f"    y{slot}[i] = {DTYPES[out_dtype].store.format(value)};")
        lines += ["  }", "}", ""]
        return "\n".join(lines)


def emit(program, signature):
    """The CUDA source (kernels and `dice_forward` with exactly `signature`)
    computing `program`. Raises Unsupported for programs it does not take."""
    return one_kernel_source(program, signature, _Emitter(program).kernel, lambda pointers: [
        "  const int64_t n = y0.numel();",
        "  const int threads = 256;",
        "  const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 65535);",
        "  layout_kernel<<<blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>("
        f"{', '.join(pointers)});"])
