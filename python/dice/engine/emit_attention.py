"""The CUDA kernel for attention: a program whose one softmax (along the
last dim) reads a matmul, the scores, and is read by a second matmul, the
values, with elementwise ops before, between and after (a scale, masks,
an epilogue).

One block a row of the scores (a query), grid-stride over the rows. The
block's threads stride over the keys, each computing a score (the dot
product of the query's row and the key's, then what the program does to
it) into shared memory and keeping its maximum; the block combines the
maxima, exponentiates and sums, and normalises the row in place. Then
each thread takes columns of the result: the dot product of the row of
probabilities with a column of the values, then the epilogue, stored.
Neither the scores nor the probabilities leave the block.
"""

from dice.corpus.cuda_common import DTYPES
from dice.engine.emit_elementwise import FLOAT_T, ROUND
from dice.engine.emit_host import Unsupported, one_kernel_source, size_expression
from dice.engine.emit_reduction import (ValueEmitter, _linear, _unravel, block_threads,
                                        used_helpers)

# Keys a row may hold: the block keeps the row's scores in shared memory.
MAX_KEYS = 4096


def _reads(program, v, target):
    """Whether value v is computed from value `target`."""
    n_in = len(program["inputs"])
    pending, seen = [v], set()
    while pending:
        u = pending.pop()
        if u == target:
            return True
        if u in seen or u < n_in:
            continue
        seen.add(u)
        pending += program["ops"][u - n_in]["args"]
    return False


class _AttentionEmitter(ValueEmitter):
    def __init__(self, program):
        super().__init__(program)
        self.softmax = self.main_op(("softmax",), "softmaxes")
        op = self.op(self.softmax)
        self.full = list(self.shape(self.softmax))
        if op["ints"]["dim"] != [len(self.full) - 1]:
            raise Unsupported("a softmax along another dim than the last")
        self.keys = self.full[-1]
        if self.keys > MAX_KEYS:
            raise Unsupported(f"rows of more than {MAX_KEYS} keys")
        self.rows = self.full[:-1]
        self.rows_c = size_expression(self.rows, wide=True)
        if FLOAT_T[op["type"]["dtype"]] != "float":
            raise Unsupported("a softmax in float64")
        matmuls = [self.n_in + i for i, o in enumerate(program["ops"]) if o["fn"] == "matmul"]
        scores = [m for m in matmuls if _reads(program, self.softmax, m)]
        values = [m for m in matmuls if _reads(program, m, self.softmax)]
        if len(scores) != 1 or len(values) != 1 or len(matmuls) != 2:
            raise Unsupported("not one matmul before the softmax and one after")
        out_shapes = {tuple(self.shape(o)) for o in program["outputs"]}
        if len(out_shapes) != 1 or list(next(iter(out_shapes)))[:-1] != self.rows:
            raise Unsupported("results not of one shape, a column for each row of scores")
        self.columns = next(iter(out_shapes))[-1]
        # The softmax, normalised in place: probs[j] of the block's row.
        self.leaves = {self.softmax: lambda coords: f"probs[{coords[-1]}]"}

    def kernel(self, in_params, out_params, out_dtypes):
        names = [f"r{d}" for d in range(len(self.rows))]
        row_coords = [f"const int64_t {n} = {c};" for n, c in zip(names, _unravel("k", self.rows))]
        op = self.op(self.softmax)
        self.new_scope()
        score = self.value(op["args"][0], names + ["j"])
        score_lines = self.lines
        rounding = ROUND.get(op["type"]["dtype"])
        p = "probs[j] / row_sum"
        lines = [
            "// One block a row of scores; the row in shared memory.",
            f"__global__ void attention_kernel({', '.join(in_params + out_params)}) {{",
            f"  __shared__ float probs[{self.keys}];",
            f"  for (int64_t k = blockIdx.x; k < {self.rows_c}; k += gridDim.x) {{"]
        lines += [f"    {line}" for line in row_coords]
        lines += ["    // The scores, and their maximum.",
                  "    float row_max = -INFINITY;",
                  f"    for (int64_t j = threadIdx.x; j < {self.keys}; j += blockDim.x) {{"]
        lines += [f"      {line}" for line in score_lines]
        lines += [f"      probs[j] = {score};",
                  "      row_max = MaxOp()(row_max, probs[j]);",
                  "    }",
                  "    row_max = block_reduce(row_max, MaxOp(), -INFINITY);",
                  "    float row_sum = 0.0f;",
                  f"    for (int64_t j = threadIdx.x; j < {self.keys}; j += blockDim.x) {{",
                  "      probs[j] = expf(probs[j] - row_max);",
                  "      row_sum += probs[j];",
                  "    }",
                  "    row_sum = block_reduce(row_sum, SumOp(), 0.0f);",
                  f"    for (int64_t j = threadIdx.x; j < {self.keys}; j += blockDim.x)",
                  f"      probs[j] = {f'{rounding}({p})' if rounding else p};",
                  "    __syncthreads();",
                  "    // Each thread a column of the results.",
                  f"    for (int64_t c = threadIdx.x; c < {self.columns}; c += blockDim.x) {{"]
        coords = names + ["c"]
        for slot, (o, dtype) in enumerate(zip(self.p["outputs"], out_dtypes)):
            self.new_scope()
            name = self.value(o, coords)
            lines += [f"      {line}" for line in self.lines]
            lines.append(f"      y{slot}[{_linear(coords, self.shape(o))}] = "
                         f"{DTYPES[dtype].store.format(name)};")
        lines += ["    }",
                  "    __syncthreads();  // the row is read before the next one is written",
                  "  }", "}", ""]
        text = "\n".join(lines)
        helpers = [h.strip("\n") + "\n" for h in used_helpers(text)]
        return "\n".join(helpers + [text])


def emit(program, signature):
    """The CUDA source (the attention kernel and `dice_forward` with exactly
    `signature`) computing `program`. Raises Unsupported for programs it
    does not take."""
    e = _AttentionEmitter(program)
    return one_kernel_source(program, signature, e.kernel, lambda pointers: [
        f"  const int blocks = (int)std::min<int64_t>({e.rows_c}, 65535);",
        f"  attention_kernel<<<blocks, {block_threads(max(e.keys, e.columns))}, 0, "
        f"c10::cuda::getCurrentCUDAStream()>>>({', '.join(pointers)});"])
