"""The CUDA kernel for a program with one scan (torch.cumsum,
torch.cumprod) and elementwise ops before and after it.

One block a row (a kept index: every coordinate but the scanned dim's;
grid-stride over them). The block walks its row in chunks of blockDim
elements: each thread computes its element's operand (the prologue,
fused), the block scans the chunk (warp shuffles up, then the warps'
totals scanned by the first warp), the carry of the chunks before is
combined in, and each thread computes the results at its element (the
epilogue, reading the scan from a register). The chunk's last value is
the next chunk's carry. The running value is kept in float (PyTorch's
accumulate type for half precision), each result rounded once to the
scan's dtype.
"""

from dice.corpus.cuda_common import DTYPES, pointer
from dice.engine.emit_elementwise import FLOAT_T, ROUND
from dice.engine.emit_host import (HostFunction, Unsupported, buffer_allocation,
                                    kernel_parameters,
                                    one_kernel_source, size_expression, source_head,
                                    used_parameters)
from dice.engine.emit_reduction import (COMBINE_OPS, ValueEmitter, _linear, _unravel,
                                         block_threads)

SCANS = {"cumsum": ("SumOp", "0"), "cumprod": ("ProdOp", "1")}

BLOCK_SCAN = r"""// The inclusive scan of the block's values under op, in thread order: a
// scan within each warp (shuffles up), then the warps' totals, scanned by
// the first warp, combined into the warps after them. blockDim.x is a
// multiple of 32.
template <typename T, typename Op>
__device__ T block_scan(T v, Op op, T identity) {
  __shared__ T totals[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int o = 1; o < 32; o <<= 1) {
    T other = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o) v = op(other, v);
  }
  if (lane == 31) totals[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int warps = blockDim.x / 32;
    T t = lane < warps ? totals[lane] : identity;
    for (int o = 1; o < 32; o <<= 1) {
      T other = __shfl_up_sync(0xffffffffu, t, o);
      if (lane >= o) t = op(other, t);
    }
    if (lane < warps) totals[lane] = t;
  }
  __syncthreads();
  if (warp > 0) v = op(totals[warp - 1], v);
  __syncthreads();  // the next call writes totals again
  return v;
}
"""


class _ScanEmitter(ValueEmitter):
    def __init__(self, program):
        super().__init__(program)
        self.scan = self.main_op(set(SCANS), "scans")
        op = self.op(self.scan)
        (self.dim,) = op["ints"]["dim"]
        self.full = list(self.shape(self.scan))
        self.kept_dims = [d for d in range(len(self.full)) if d != self.dim]
        self.kept_shape = [self.full[d] for d in self.kept_dims]
        self.extent = self.full[self.dim]
        self.kept_c = size_expression(self.kept_shape, wide=True)
        for o in program["outputs"]:
            if list(self.shape(o)) != self.full:
                raise Unsupported("a result of another shape than the scan's")
        self.leaves = {self.scan: "scanned"}

    def coords(self):
        """The full coordinates of element r of row k."""
        kept = dict(zip(self.kept_dims, _unravel("k", self.kept_shape)))
        return [kept.get(d, "r") for d in range(len(self.full))]

    def kernel(self, in_params, out_params, out_dtypes, outputs=None, out_names=None):
        """The scan kernel storing `outputs` (the program's by default) to
        `out_names` (y0..)."""
        outputs = self.p["outputs"] if outputs is None else outputs
        out_names = out_names or [f"y{slot}" for slot in range(len(outputs))]
        op = self.op(self.scan)
        combine, identity = SCANS[op["fn"]]
        acc_t = FLOAT_T[op["type"]["dtype"]]
        coords = self.coords()
        self.new_scope()
        operand = self.value(op["args"][0], coords)
        load = self.lines
        self.new_scope()
        rounding = ROUND.get(op["type"]["dtype"])
        stores = [f"const {acc_t} scanned = "
                  f"{f'{rounding}(running)' if rounding else 'running'};"]
        for target, o, dtype in zip(out_names, outputs, out_dtypes):
            name = self.value(o, coords)
            stores += self.lines
            self.lines = []
            stores.append(f"{target}[{_linear(coords, self.full)}] = "
                          f"{DTYPES[dtype].store.format(name)};")
        lines = [
            "// One block a row; its threads walk the row in chunks of blockDim elements.",
            f"__global__ void scan_kernel({', '.join(in_params + out_params)}) {{",
            f"  __shared__ {acc_t} chunk_total;",
            f"  for (int64_t k = blockIdx.x; k < {self.kept_c}; k += gridDim.x) {{",
            f"    {acc_t} carry = {identity};",
            f"    for (int64_t base = 0; base < {self.extent}; base += blockDim.x) {{",
            "      const int64_t r = base + threadIdx.x;",
            f"      {acc_t} x = {identity};",
            f"      if (r < {self.extent}) {{"]
        lines += [f"        {line}" for line in load]
        lines += [f"        x = {operand};",
                  "      }",
                  f"      const {acc_t} running = {combine}()(carry, "
                  f"block_scan(x, {combine}(), ({acc_t}){identity}));",
                  f"      if (r < {self.extent}) {{"]
        lines += [f"        {line}" for line in stores]
        lines += ["      }",
                  "      // The chunk's last value carries into the next chunk.",
                  "      if (threadIdx.x == blockDim.x - 1) chunk_total = running;",
                  "      __syncthreads();",
                  "      carry = chunk_total;",
                  "      __syncthreads();",
                  "    }",
                  "  }",
                  "}", ""]
        return "\n".join([COMBINE_OPS[combine], "", BLOCK_SCAN] + lines)


def _read_elsewhere(program, scan):
    """Whether the results read the scan through an index (a flip): at
    other elements than the one a thread scans."""
    n_in = len(program["inputs"])
    reads = {scan}
    for i, op in enumerate(program["ops"]):
        if reads & set(op["args"]):
            if op["fn"] == "index" and op["args"][0] in reads:
                return True
            reads.add(n_in + i)
    return False


def emit(program, signature):
    """The CUDA source (the scan kernel and `dice_forward` with exactly
    `signature`) computing `program`. Raises Unsupported for programs it
    does not take."""
    e = _ScanEmitter(program)
    if _read_elsewhere(program, e.scan):
        return _emit_two_kernels(e, signature)
    return one_kernel_source(program, signature, e.kernel, lambda pointers: [
        f"  const int blocks = (int)std::min<int64_t>({e.kept_c}, 65535);",
        f"  scan_kernel<<<blocks, {block_threads(e.extent)}, 0, "
        f"c10::cuda::getCurrentCUDAStream()>>>("
        f"{', '.join(pointers)});"])


def _emit_two_kernels(e, signature):
    """The scan stored in a buffer w0 of its shape and dtype, then the
    results computed from it, each where it reads the scan (a reversed
    scan's flip reads the row from its other end)."""
    program = e.p
    names, head = source_head(program, signature)
    in_params, out_params = kernel_parameters(program)
    out_dtypes = [e.types[o]["dtype"] for o in program["outputs"]]
    dtype = e.types[e.scan]["dtype"]
    c_type = DTYPES[dtype].c_type
    host = HostFunction(program, signature, names)
    x_pointers = host.pointers[:len(program["inputs"])]
    buffer_out = [f"{c_type} *__restrict__ w0"]
    scan = used_parameters(e.kernel(in_params, buffer_out, [dtype], outputs=[e.scan],
                                    out_names=["w0"]), "scan_kernel", in_params, buffer_out,
                           x_pointers)
    buffer_in = [f"const {c_type} *__restrict__ w0"]
    results = used_parameters(ValueEmitter(program, loaded={e.scan: "w0"}).element_kernel(
        "results_kernel", "// The results, a thread an element, reading the scan from w0.",
        in_params + buffer_in + out_params, e.full, out_dtypes, lambda _names: []),
        "results_kernel", in_params + buffer_in, out_params, x_pointers + [pointer("w0", dtype)])
    launches = [
        buffer_allocation("w0", e.full, DTYPES[dtype].kind, names[0]),
        f"  scan_kernel<<<(int)std::min<int64_t>({e.kept_c}, 65535), {block_threads(e.extent)}, "
        f"0, c10::cuda::getCurrentCUDAStream()>>>("
        f"{', '.join(scan[1] + [pointer('w0', dtype, const=False)])});",
        f"  const int64_t n = {size_expression(e.full, wide=True)};",
        "  results_kernel<<<(int)std::min<int64_t>((n + 255) / 256, 65535), 256, 0, "
        f"c10::cuda::getCurrentCUDAStream()>>>("
        f"{', '.join(results[1] + host.pointers[len(program['inputs']):])});"]
    return "\n".join([head, scan[0], results[0], host.text(launches)]) + "\n"
