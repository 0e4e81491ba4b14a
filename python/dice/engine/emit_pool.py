"""The CUDA kernel for a program with one pool (`max_pool`, or `sum_pool`
of an average) and elementwise ops around it: one output element a thread
(grid-stride), its window walked in registers with the prologue fused into
each read (a padded read only inside the input, the pad value outside),
max with NaN propagating as PyTorch's, a half-precision sum accumulated in
float32 and rounded once, the epilogue fused into the store."""

import math

from dice.corpus.cuda_common import DTYPES
from dice.engine.emit_elementwise import ROUND
from dice.engine.emit_host import Unsupported, one_kernel_source, size_expression
from dice.engine.emit_reduction import ValueEmitter, _unravel

POOLS = ("max_pool", "sum_pool")


class _Emitter(ValueEmitter):
    def __init__(self, program):
        super().__init__(program)
        pools = [self.n_in + i for i, op in enumerate(program["ops"]) if op["fn"] in POOLS]
        if len(pools) != 1:
            raise Unsupported(f"{len(pools)} pools")
        self.pool = pools[0]
        self.out = self.shape(self.pool)
        for o in program["outputs"]:
            if math.prod(self.shape(o)) != math.prod(self.out):
                raise Unsupported("a result not of the pool's elements")
        self.leaves = {self.pool: "acc"}

    def window_loop(self, coords):
        """Loops over the pool's window at output `coords`, accumulating."""
        op = self.op(self.pool)
        ints = op["ints"]
        kernel, stride = ints["kernel"], ints["stride"]
        dilation = ints.get("dilation", [1] * len(kernel))
        lead = len(self.out) - len(kernel)
        source = list(coords[:lead])
        loops = []
        for d, (k, s, dl) in enumerate(zip(kernel, stride, dilation)):
            out = coords[lead + d]
            if k == 1:
                source.append(out if s == 1 else f"{out} * {s}")
                continue
            base = out if s == 1 else f"{out} * {s}"
            step = f"w{d}" if dl == 1 else f"w{d} * {dl}"
            source.append(f"{base} + {step}")
            loops.append(f"for (int w{d} = 0; w{d} < {k}; ++w{d})")
        self.new_scope()
        name = self.value(op["args"][0], source)
        if op["fn"] == "max_pool":
            combine = f"acc = ({name} > acc || {name} != {name}) ? {name} : acc;"
        else:
            combine = f"acc += {name};"
        body = self.lines + [combine]
        indent = "    "
        lines = []
        for depth, loop in enumerate(loops):
            lines.append(indent + "  " * depth + loop + (" {" if depth == len(loops) - 1 else ""))
        inner = indent + "  " * len(loops)
        lines += [inner + line for line in body]
        if loops:
            lines.append(indent + "  " * (len(loops) - 1) + "}")
        return lines

    def kernel(self, in_params, out_params, out_dtypes):
        op = self.op(self.pool)
        dtype = self.types[self.pool]["dtype"]
        acc_t = self.c_type(self.pool)
        names = [f"o{d}" for d in range(len(self.out))]
        coords = _unravel("i", self.out)
        lines = ["// One output element a thread, grid-stride; the window in registers.",
                 f"__global__ void pool_kernel({', '.join(in_params + out_params)}) {{",
                 f"  const int64_t n = {size_expression(self.out, wide=True)};",
                 "  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;",
                 "       i += (int64_t)gridDim.x * blockDim.x) {"]
        for name, c in zip(names, coords):
            lines.append(f"    const int64_t {name} = {c};")
        identity = "-INFINITY" if op["fn"] == "max_pool" else "0"
        lines.append(f"    {acc_t} acc = {identity};")
        lines += self.window_loop(names)
        if op["fn"] == "sum_pool" and dtype in ROUND:
            lines.append(f"    acc = {ROUND[dtype]}(acc);")
        for slot, (o, out_dtype) in enumerate(zip(self.p["outputs"], out_dtypes)):
            self.new_scope()
            name = self.value(o, _unravel("i", self.shape(o)))
            lines += [f"    {line}" for line in self.lines]
            lines.append(f"    y{slot}[i] = {DTYPES[out_dtype].store.format(name)};")
        lines += ["  }", "}", ""]
        return "\n".join(lines)


def emit(program, signature):
    """The CUDA source (kernels and `dice_forward` with exactly `signature`)
    computing `program`. Raises Unsupported for programs it does not take."""
    return one_kernel_source(program, signature, _Emitter(program).kernel, lambda pointers: [
        "  const int64_t n = y0.numel();",
        "  const int threads = 256;",
        "  const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 65535);",
        "  pool_kernel<<<blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>("
        f"{', '.join(pointers)});"])
