"""The CUDA kernel for a program with one matmul (2-D or batched) and an
elementwise epilogue: a tiled GEMM whose tiles are loaded through the
program's own views of the operands (a linear weight's permute, a half
operand's cast; a transposed one read along k, so loads stay coalesced),
with zero-filled edge tiles so any M, N and K work, and
the epilogue fused into the store."""

import math

from dice.corpus.cuda_common import DTYPES
from dice.engine.emit_elementwise import ELEMENTWISE
from dice.engine.emit_host import Unsupported, one_kernel_source
from dice.engine.emit_reduction import ValueEmitter, _unravel

TILE = 16


class _Emitter(ValueEmitter):
    def __init__(self, program):
        super().__init__(program)
        self.mm = self.main_op(("matmul",), "matmuls")
        self.a, self.b = self.op(self.mm)["args"]
        self.out = self.shape(self.mm)
        if len(self.out) not in (2, 3):
            raise Unsupported("matmul of rank other than 2 or 3")
        self.m, self.n = self.out[-2:]
        self.k = self.shape(self.a)[-1]
        self.batch = self.out[0] if len(self.out) == 3 else 1
        for o in program["outputs"]:
            if self.shape(o) != self.out and not self.reshaped(o):
                raise Unsupported("a result not of the matmul's shape")

    def reshaped(self, o):
        """Whether result o holds the matmul's elements in their order, in
        another shape: computed from it by elementwise ops and reshapes
        only (a linear of a 3-D input is the 2-D one between two
        reshapes). Its element at the matmul's linear index is then the one
        this thread's accumulator is for."""
        if math.prod(self.shape(o)) != math.prod(self.out):
            return False
        return all(self.op(v)["fn"] in ELEMENTWISE or self.mm not in self.upstream(v)
                   for v in self.upstream(o, {self.mm}) - {self.mm})

    def k_contiguous(self, v):
        """Whether operand v is a view whose memory runs along k: a permute
        that swaps the last two dims, behind casts."""
        while v >= self.n_in and self.op(v)["fn"] == "to":
            v = self.op(v)["args"][0]
        if v < self.n_in or self.op(v)["fn"] != "permute":
            return False
        dims = self.op(v)["ints"]["dims"]
        rank = len(dims)
        return dims[-2:] == [rank - 1, rank - 2] and dims[:-2] == list(range(rank - 2))

    def block(self, target, coords, guard, assign):
        """`assign` the value `target` at `coords`, or 0 outside `guard`."""
        self.new_scope()
        name = self.value(target, coords)
        body = [f"  {line}" for line in self.lines]
        return [f"if ({guard}) {{"] + body + [f"  {assign}{name};", "}"]

    def kernel(self, in_params, out_params, out_dtypes):
        b = ["batch"] if len(self.out) == 3 else []
        acc_t = self.c_type(self.mm)
        lines = [
            f"constexpr int kTile = {TILE};",
            "",
            "// One kTile x kTile block of the result a thread block; K in tiles",
            "// through shared memory, edge tiles zero-filled.",
            f"__global__ void matmul_kernel({', '.join(in_params + out_params)}) {{",
            "  const int64_t batch = blockIdx.z;",
            "  const int64_t row = (int64_t)blockIdx.y * kTile + threadIdx.y;",
            "  const int64_t col = (int64_t)blockIdx.x * kTile + threadIdx.x;",
            f"  __shared__ {acc_t} a_tile[kTile][kTile + 1];",
            f"  __shared__ {acc_t} b_tile[kTile][kTile + 1];",
            f"  {acc_t} acc = 0;",
            f"  for (int64_t t = 0; t < {self.k}; t += kTile) {{",
            "    {",
            "      const int64_t kk = t + threadIdx.x;",
            f"      {acc_t} a_value = 0;"]
        lines += [f"      {line}" for line in self.block(
            self.a, b + ["row", "kk"], f"row < {self.m} && kk < {self.k}", "a_value = ")]
        lines += ["      a_tile[threadIdx.y][threadIdx.x] = a_value;", "    }", "    {"]
        if self.k_contiguous(self.b):
            # B is a transposed view (a linear weight, [N, K] in memory):
            # consecutive threads read consecutive k, and store transposed.
            lines += ["      const int64_t kk = t + threadIdx.x;",
                      "      const int64_t cc = (int64_t)blockIdx.x * kTile + threadIdx.y;",
                      f"      {acc_t} b_value = 0;"]
            lines += [f"      {line}" for line in self.block(
                self.b, b + ["kk", "cc"], f"kk < {self.k} && cc < {self.n}", "b_value = ")]
            lines += ["      b_tile[threadIdx.x][threadIdx.y] = b_value;", "    }"]
        else:
            lines += ["      const int64_t kk = t + threadIdx.y;",
                      f"      {acc_t} b_value = 0;"]
            lines += [f"      {line}" for line in self.block(
                self.b, b + ["kk", "col"], f"kk < {self.k} && col < {self.n}", "b_value = ")]
            lines += ["      b_tile[threadIdx.y][threadIdx.x] = b_value;", "    }"]
        lines += [
                  "    __syncthreads();",
                  "    // Each tile summed on its own, then into the total: the",
                  "    // rounding error grows with kTile + K / kTile, not with K.",
                  f"    {acc_t} partial = 0;",
                  "    for (int i = 0; i < kTile; ++i)",
                  "      partial += a_tile[threadIdx.y][i] * b_tile[i][threadIdx.x];",
                  "    acc += partial;",
                  "    __syncthreads();", "  }"]
        index = f"(batch * {self.m} + row) * {self.n} + col" if b else f"row * {self.n} + col"
        for slot, (o, dtype) in enumerate(zip(self.p["outputs"], out_dtypes)):
            store = DTYPES[dtype].store
            self.new_scope()
            coords = b + ["row", "col"] if self.shape(o) == self.out else \
                _unravel(index, self.shape(o))
            name = self.value(o, coords)
            lines += [f"  if (row < {self.m} && col < {self.n}) {{"]
            lines += [f"    {line}" for line in self.lines]
            lines += [f"    y{slot}[{index}] = {store.format(name)};", "  }"]
        lines += ["}", ""]
        return "\n".join(lines)


def emit(program, signature):
    """The CUDA source (kernels and `dice_forward` with exactly `signature`)
    computing `program`. Raises Unsupported for programs it does not take."""
    e = _Emitter(program)
    return one_kernel_source(program, signature, e.kernel, lambda pointers: [
        f"  const dim3 grid(({e.n} + kTile - 1) / kTile, ({e.m} + kTile - 1) / kTile, "
        f"{e.batch});",
        "  const dim3 block(kTile, kTile);",
        "  matmul_kernel<<<grid, block, 0, c10::cuda::getCurrentCUDAStream()>>>("
        f"{', '.join(pointers)});"])
