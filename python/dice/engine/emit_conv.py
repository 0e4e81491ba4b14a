"""The CUDA kernel for a program with one convolution (no padding of its
own, one group) and elementwise ops around it: one output element a thread
(grid-stride), the input channels and the window walked in registers, the
prologue fused into each input read (a padded read only inside the input,
zero outside), float32 accumulation, the bias and epilogue fused into the
store."""

import math

from dice.corpus.cuda_common import DTYPES
from dice.engine.emit_host import Unsupported, one_kernel_source, size_expression
from dice.engine.emit_reduction import ValueEmitter, _unravel


class _Emitter(ValueEmitter):
    def __init__(self, program):
        super().__init__(program)
        convs = [self.n_in + i for i, op in enumerate(program["ops"]) if op["fn"] == "conv"]
        if len(convs) != 1:
            raise Unsupported(f"{len(convs)} convolutions")
        self.conv = convs[0]
        op = self.op(self.conv)
        if op["ints"]["groups"] != [1] or any(op["ints"]["padding"]):
            raise Unsupported("a grouped or padding convolution")
        self.out = self.shape(self.conv)
        for o in program["outputs"]:
            if math.prod(self.shape(o)) != math.prod(self.out):
                raise Unsupported("a result not of the convolution's elements")
        self.leaves = {self.conv: "acc"}

    def window_loop(self, coords):
        """Loops over the input channels and the window at output `coords`
        (n, f, spatial...), accumulating input times weight."""
        op = self.op(self.conv)
        x, w = op["args"]
        ints = op["ints"]
        kernel = self.shape(w)[2:]
        channels = self.shape(w)[1]
        source, taps = [coords[0], "c"], ["c"]
        loops = [f"for (int c = 0; c < {channels}; ++c)"] if channels > 1 else []
        if channels == 1:
            source[1], taps[0] = "0", "0"
        for d, (k, s, dl) in enumerate(zip(kernel, ints["stride"], ints["dilation"])):
            out = coords[2 + d]
            base = out if s == 1 else f"{out} * {s}"
            if k == 1:
                source.append(base)
                taps.append("0")
                continue
            step = f"k{d}" if dl == 1 else f"k{d} * {dl}"
            source.append(f"{base} + {step}")
            taps.append(f"k{d}")
            loops.append(f"for (int k{d} = 0; k{d} < {k}; ++k{d})")
        self.new_scope()
        xv = self.value(x, source)
        wv = self.value(w, [coords[1]] + taps)
        body = self.lines + [f"acc += {xv} * {wv};"]
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
        names = [f"o{d}" for d in range(len(self.out))]
        lines = ["// One output element a thread, grid-stride; channels and window in registers.",
                 f"__global__ void conv_kernel({', '.join(in_params + out_params)}) {{",
                 f"  const int64_t n = {size_expression(self.out, wide=True)};",
                 "  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;",
                 "       i += (int64_t)gridDim.x * blockDim.x) {"]
        lines += [f"    const int64_t {name} = {c};"
                  for name, c in zip(names, _unravel("i", self.out))]
        lines.append("    float acc = 0.0f;")
        lines += self.window_loop(names)
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
        "  conv_kernel<<<blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>("
        f"{', '.join(pointers)});"])
