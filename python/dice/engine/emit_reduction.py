"""The CUDA kernel for a reference program with reductions (and the
normalizations, written as theirs): every
reduction over the same dims of the same full shape (a `var` is two sums),
elementwise ops before, between and after them.

One block a kept index (grid-stride over them). For each reduction in
order, the block's threads stride over the reduced elements, compute the
reduction's operand there (the prologue, fused, reading earlier
reductions' results from registers), and combine: warp shuffles, then one
shared-memory step across warps. Results of the reduced shape are written
by the block's first thread; results of the full shape (`x - max`) in a
last pass over the reduced elements.

Values are addressed by their own shapes: an op reads each operand at the
coordinates that broadcasting (right-aligned) gives it, a reshape maps
through the linear index, so keepdim reshapes and broadcasts need no
special case.
"""

import math
import re

from dice.corpus.cuda_common import DTYPES
from dice.engine.emit_elementwise import (FLOAT_T, ROUND, constant_expression, unfused_sub,
                                          inline_constant, op_expression)
from dice.engine.emit_host import (Unsupported, one_kernel_source, over, size_expression,
                                    stride_expressions)

REDUCING = {"sum", "amax", "amin", "prod", "logsumexp", "argmax", "argmin"}
IDENTITY = {"sum": "0", "prod": "1", "amax": "-INFINITY", "amin": "INFINITY"}
COMBINE = {"sum": "SumOp", "prod": "ProdOp", "amax": "MaxOp", "amin": "MinOp"}

# The device helpers a kernel may call, each written into a source only
# when its kernel calls it: an answer the model learns holds no dead code.
COMBINE_OPS = {
    "SumOp": """struct SumOp {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};""",
    "ProdOp": """struct ProdOp {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a * b; }
};""",
    "MaxOp": """// NaN wins, as in torch.amax.
struct MaxOp {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const {
    return (a > b || a != a) ? a : b;
  }
};""",
    "MinOp": """// NaN wins, as in torch.amin.
struct MinOp {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const {
    return (a < b || a != a) ? a : b;
  }
};"""}

BLOCK_REDUCE = r"""// The block's combined value, in every thread. Warp shuffles, then the
// warps' partials in shared memory, combined by the first warp.
template <typename T, typename Op>
__device__ T block_reduce(T v, Op op, T identity) {
  __shared__ T partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (blockDim.x >= 32)
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (int)((blockDim.x + 31) / 32) ? partial[lane] : identity;
    if (blockDim.x >= 32)
      for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
    if (lane == 0) partial[0] = v;
  }
  __syncthreads();
  v = partial[0];
  __syncthreads();
  return v;
}
"""

BLOCK_ARG_REDUCE = r"""// (value, index) of the block's extremum, the first index among equals
// and NaN as the extreme, as torch.argmax and torch.argmin.
template <typename T>
__device__ __forceinline__ bool arg_better(T a, int64_t ia, T b, int64_t ib, bool is_max) {
  if (a != a || b != b) return a != a && (b == b || ia < ib);
  if (a == b) return ia < ib;
  return is_max ? a > b : a < b;
}
template <typename T>
__device__ int64_t block_arg_reduce(T v, int64_t i, bool is_max) {
  __shared__ T partial_v[32];
  __shared__ int64_t partial_i[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (blockDim.x >= 32)
    for (int o = 16; o > 0; o >>= 1) {
      T ov = __shfl_down_sync(0xffffffffu, v, o);
      int64_t oi = __shfl_down_sync(0xffffffffu, i, o);
      if (arg_better(ov, oi, v, i, is_max)) { v = ov; i = oi; }
    }
  if (lane == 0) { partial_v[warp] = v; partial_i[warp] = i; }
  __syncthreads();
  if (warp == 0) {
    const int warps = (blockDim.x + 31) / 32;
    v = partial_v[lane < warps ? lane : 0];
    i = partial_i[lane < warps ? lane : 0];
    if (blockDim.x >= 32)
      for (int o = 16; o > 0; o >>= 1) {
        T ov = __shfl_down_sync(0xffffffffu, v, o);
        int64_t oi = __shfl_down_sync(0xffffffffu, i, o);
        if (arg_better(ov, oi, v, i, is_max)) { v = ov; i = oi; }
      }
    if (lane == 0) partial_i[0] = i;
  }
  __syncthreads();
  i = partial_i[0];
  __syncthreads();
  return i;
}
"""


class _Unravelled(str):
    """A coordinate `_unravel` wrote: its text, and the linear index and
    the sizes (those above 1) it was taken from, so that `_linear` can
    write the whole run back as that index."""

    def __new__(cls, text, linear, sizes):
        coord = super().__new__(cls, text)
        coord.origin = (linear, sizes)
        return coord


def _unravel(linear, shape):
    """C expressions of the coordinates of `linear` in `shape` ("0" where
    the size is 1)."""
    strides = stride_expressions(shape)
    sizes = tuple(s for s in shape if s != 1)
    bare = linear if linear.isidentifier() else f"({linear})"
    coords = []
    for d, size in enumerate(shape):
        if size == 1:
            coords.append("0")
            continue
        c = linear if strides[d] == "1" else f"{bare} / {over(strides[d])}"
        if d > 0:
            c = f"{over(c)} % {size}"
        coords.append(_Unravelled(c if c.isidentifier() else f"({c})", linear, sizes))
    return coords


def _rejoined(coords, sizes):
    """`coords` (of dims of `sizes`, none of size 1) with each whole run
    that `_unravel` took from one linear index over those very sizes
    written as that index: `(k / 4) * 4 + k % 4` is `k`."""
    out, d = [], 0
    while d < len(coords):
        origin = getattr(coords[d], "origin", None)
        run = len(origin[1]) if origin else 0
        if run > 1 and tuple(sizes[d:d + run]) == origin[1] and all(
                getattr(c, "origin", None) == origin for c in coords[d:d + run]):
            out.append((origin[0], size_expression(origin[1])))
            d += run
        else:
            out.append((coords[d], str(sizes[d])))
            d += 1
    return out


def _linear(coords, shape):
    """The row-major offset of `coords` in `shape`, in Horner form
    ((c0 * s1 + c1) * s2 + c2): a CUDA engineer's, and made of the
    shape's own sizes."""
    kept = [(c, size) for c, size in zip(coords, shape) if size != 1]
    offset = "0"
    for c, size in _rejoined([c for c, _ in kept], [size for _, size in kept]):
        if offset == "0":
            offset = c
        else:
            scaled = f"{over(offset)} * {size}"
            offset = scaled if c == "0" else f"{scaled} + {c}"
    return offset


def _merges(fine, coarse):
    """The runs of consecutive `fine` dims whose sizes multiply to each
    `coarse` dim, or None where the reshape is not such a merge."""
    groups, d = [], 0
    for size in coarse:
        group, product = [], 1
        while d < len(fine) and (product < size or not group):
            group.append(d)
            product *= fine[d]
            d += 1
        if product != size:
            return None
        groups.append(group)
    while groups and d < len(fine) and fine[d] == 1:  # trailing 1s join the last run
        groups[-1].append(d)
        d += 1
    return groups if d == len(fine) else None


def merged_coords(coords, fine, coarse):
    """`coords` of shape `fine` as coordinates of `coarse`, when `coarse`
    merges runs of consecutive dims of `fine` (None otherwise)."""
    if list(fine) == list(coarse):
        return None
    groups = _merges(fine, coarse)
    if groups is None:
        return None
    return [_linear([coords[d] for d in g], [fine[d] for d in g]) for g in groups]


def split_coords(coords, coarse, fine):
    """`coords` of shape `coarse` as coordinates of `fine`, when `fine`
    splits each dim of `coarse` into a run of dims (None otherwise)."""
    groups = _merges(fine, coarse)
    if groups is None:
        return None
    out = []
    for c, g in zip(coords, groups):
        out += _unravel(c, [fine[d] for d in g]) if len(g) > 1 else [c] * len(g)
    return out


class ValueEmitter:
    """C code for the values of a static program at given coordinates:
    the shared part of the emitters whose kernels index the program's
    values (reductions, matmuls, pools). `leaves` maps the values a kernel
    computes itself (a reduction's result, a matmul's accumulator) to the
    C expression holding them; `loaded` maps the values an earlier kernel
    stored (a reduction of an earlier stage) to the buffer holding them,
    read like an input."""

    def __init__(self, program, loaded=None):
        self.p = program
        self.n_in = len(program["inputs"])
        self.types = list(program["inputs"]) + [op["type"] for op in program["ops"]]
        if any(not isinstance(s, int) for t in self.types for s in t["shape"]):
            raise Unsupported("dynamic sizes")
        self.leaves = {}
        self.loaded = dict(loaded or {})
        self.new_scope()

    def new_scope(self):
        """A fresh C scope: nothing computed, no name taken."""
        self.lines, self.memo, self.taken = [], {}, set()

    def op(self, value):
        return self.p["ops"][value - self.n_in]

    def shape(self, value):
        return self.types[value]["shape"]

    def c_type(self, value):
        return FLOAT_T[self.types[value]["dtype"]]

    @staticmethod
    def dims_of(op):
        ints = op.get("ints", {})
        return sorted(ints.get("dims", ints.get("dim", [])))

    def main_op(self, fns, what):
        """The value of the program's one op among `fns` (Unsupported for
        none or several); it becomes the kernel's accumulator `acc`."""
        found = [self.n_in + i for i, op in enumerate(self.p["ops"]) if op["fn"] in fns]
        if len(found) != 1:
            raise Unsupported(f"{len(found)} {what}")
        self.leaves = {found[0]: "acc"}
        return found[0]

    @staticmethod
    def window(coords, kernel, stride, dilation, var):
        """A window at output `coords` (one a spatial dim): the source
        coordinates, the tap of each dim (`var`0.. or 0) and the loops over
        the taps of the dims wider than one."""
        source, taps, loops = [], [], []
        for d, (out, k, s, dl) in enumerate(zip(coords, kernel, stride, dilation)):
            base = out if s == 1 else f"{out} * {s}"
            if k == 1:
                source.append(base)
                taps.append("0")
                continue
            tap = f"{var}{d}"
            source.append(f"{base} + {tap if dl == 1 else f'{tap} * {dl}'}")
            taps.append(tap)
            loops.append(f"for (int {tap} = 0; {tap} < {k}; ++{tap})")
        return source, taps, loops

    # --- kernels of one output element a thread ----------------------------
    @staticmethod
    def nested(loops, body, indent="    "):
        """`body` inside the `loops` (C `for` heads), outermost first."""
        lines = [indent + "  " * depth + loop + (" {" if depth == len(loops) - 1 else "")
                 for depth, loop in enumerate(loops)]
        lines += [indent + "  " * len(loops) + line for line in body]
        if loops:
            lines.append(indent + "  " * (len(loops) - 1) + "}")
        return lines

    def element_kernel(self, name, comment, params, out, out_dtypes, middle):
        """A grid-stride kernel over the elements of shape `out`: coordinates
        o0.. of element i, `middle(names)` (the lines before the results),
        then each result computed at them and stored."""
        names = [f"o{d}" for d in range(len(out))]
        lines = [comment, f"__global__ void {name}({', '.join(params)}) {{",
                 f"  const int64_t n = {size_expression(out, wide=True)};",
                 "  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;",
                 "       i += (int64_t)gridDim.x * blockDim.x) {"]
        lines += [f"    const int64_t {d} = {c};" for d, c in zip(names, _unravel("i", out))]
        lines += middle(names)
        # The results share one C scope: a value two of them read (a
        # constant, a common subexpression) is declared and computed once.
        self.new_scope()
        for slot, (o, out_dtype) in enumerate(zip(self.p["outputs"], out_dtypes)):
            shape = self.shape(o)
            before = len(self.lines)
            value = self.value(o, names if list(shape) == list(out) else _unravel("i", shape))
            lines += [f"    {line}" for line in self.lines[before:]]
            lines.append(f"    y{slot}[i] = {DTYPES[out_dtype].store.format(value)};")
        return "\n".join(lines + ["  }", "}", ""])

    # --- values at coordinates -----------------------------------------------
    def value(self, v, coords):
        """The name of a C variable holding value v at `coords` (of v's own
        shape), emitting its computation into self.lines once."""
        key = (v, tuple(coords))
        if key in self.memo:
            return self.memo[key]
        if v >= self.n_in and self.op(v)["fn"] == "scalar" and v not in self.leaves:
            return inline_constant(self.op(v))
        if v >= self.n_in and self.op(v)["fn"] == "pad":
            return self.padded(v, coords)
        if v >= self.n_in and self.op(v)["fn"] == "cat":
            return self.concatenated(v, coords)
        if v >= self.n_in and self.op(v)["fn"] == "insert_slice":
            return self.inserted(v, coords)
        if v >= self.n_in and self.op(v)["fn"] == "matmul" and v not in self.leaves:
            return self.dot(v, coords)
        if v < self.n_in or v in self.loaded:
            dtype = self.types[v]["dtype"]
            buffer = self.loaded.get(v, f"x{v}")
            load = DTYPES[dtype].load if dtype in DTYPES else "{}"
            expr = load.format(f"{buffer}[{_linear(coords, self.shape(v))}]")
        else:
            expr = self.expression(v, coords)
        if v in self.leaves:
            self.memo[key] = expr
            return expr
        name = self.fresh_name(v)
        self.lines.append(f"{self.c_type(v)} {name} = {expr};")
        self.memo[key] = name
        return name

    def padded(self, v, coords):
        """A pad's value at `coords`: its operand's, computed only inside
        the operand (what it reads there may not exist outside), the pad
        value outside."""
        op = self.op(v)
        low, high = op["ints"]["low"], op["ints"]["high"]
        source, inside = [], []
        for c, a, b, size in zip(coords, low, high, self.shape(op["args"][0])):
            s = c if a == 0 else f"({c} - {a})"
            source.append(s)
            if a:
                inside.append(f"{s} >= 0")
            if a or b:
                inside.append(f"{s} < {size}")
        fill = op.get("value", 0.0)
        fill = "-INFINITY" if fill == "-inf" else constant_expression(
            {"value": float(fill), "type": op["type"]})
        name = self.fresh_name(v)
        body, inner = self.branch(op["args"][0], source)
        self.lines.append(f"{self.c_type(v)} {name} = {fill};")
        self.lines.append(f"if ({' && '.join(inside) or 'true'}) {{")
        self.lines += [f"  {line}" for line in body] + [f"  {name} = {inner};", "}"]
        self.memo[(v, tuple(coords))] = name
        return name

    def dot(self, v, coords):
        """A matmul's value at `coords`, computed where it is read: the dot
        product of its operands' row and column, a loop over the shared
        dim (a kernel whose main op is another reads it so, as attention
        reads its scores)."""
        op = self.op(v)
        if op["type"]["dtype"] != "float32":
            raise Unsupported(f"a matmul in {op['type']['dtype']}")
        a, b = op["args"]
        if self.computes_a_matmul(a) or self.computes_a_matmul(b):
            # Its loop would compute the inner one again at every step:
            # work that grows as a power of the matmuls' depth.
            raise Unsupported("a matmul read inside another matmul's loop")
        name = self.fresh_name(v)
        k = f"{name}_k"
        row = list(coords[:-1]) + [k]
        column = list(coords[:-2]) + [k, coords[-1]]
        body_a, x = self.branch(a, row[len(row) - len(self.shape(a)):])
        body_b, y = self.branch(b, column[len(column) - len(self.shape(b)):])
        self.lines += [f"{self.c_type(v)} {name} = 0;",
                       f"for (int64_t {k} = 0; {k} < {self.shape(a)[-1]}; ++{k}) {{"]
        self.lines += [f"  {line}" for line in body_a + body_b] + [f"  {name} += {x} * {y};",
                                                                   "}"]
        self.memo[(v, tuple(coords))] = name
        return name

    def upstream(self, v, stop=()):
        """The op values v is computed from, v among them: the walk back from
        v ends at inputs and at the values in `stop` (which it includes)."""
        pending, seen = [v], set()
        while pending:
            u = pending.pop()
            if u < self.n_in or u in seen:
                continue
            seen.add(u)
            if u not in stop:
                pending += self.op(u)["args"]
        return seen

    def computes_a_matmul(self, v):
        """Whether computing value v here computes a matmul (one that is not
        a leaf or loaded: those are read, not computed)."""
        read = set(self.leaves) | set(self.loaded)
        return any(self.op(u)["fn"] == "matmul" for u in self.upstream(v, read) - read)

    def inserted(self, v, coords):
        """An insert_slice's value at `coords`: the source's where the
        coordinates fall on its strided slice (computed only there), the
        destination's elsewhere."""
        op = self.op(v)
        source, dest = op["args"]
        ints = op["ints"]
        at, on = [], []
        for c, o, size, st, whole in zip(coords, ints["offsets"], ints["sizes"],
                                         ints["strides"], self.shape(dest)):
            c = c if re.fullmatch(r"\w+", c) else f"({c})"
            shifted = c if o == 0 else f"({c} - {o})"
            at.append(shifted if st == 1 else f"{shifted} / {st}")
            if o:
                on.append(f"{c} >= {o}")
            if st != 1:
                on.append(f"{shifted} % {st} == 0")
            if o + (size - 1) * st + 1 < whole:
                on.append(f"{shifted} < {(size - 1) * st + 1}")
        name = self.fresh_name(v)
        body, inner = self.branch(source, at)
        outside, other = self.branch(dest, coords)
        self.lines.append(f"{self.c_type(v)} {name};")
        self.lines.append(f"if ({' && '.join(on) or 'true'}) {{")
        self.lines += [f"  {line}" for line in body] + [f"  {name} = {inner};", "} else {"]
        self.lines += [f"  {line}" for line in outside] + [f"  {name} = {other};", "}"]
        self.memo[(v, tuple(coords))] = name
        return name

    def branch(self, v, coords):
        """Value v at `coords` computed into a branch of its own: (its lines,
        its name); the scope's values stay as they were outside it."""
        outer, memo = self.lines, dict(self.memo)
        self.lines = []
        name = self.value(v, coords)
        body, self.lines, self.memo = self.lines, outer, memo
        return body, name

    def concatenated(self, v, coords):
        """A cat's value at `coords`: the operand whose range along the dim
        holds the coordinate, at the coordinate less the sizes before it;
        only that operand is computed (the others' reads would be outside)."""
        op = self.op(v)
        (dim,) = op["ints"]["dim"]
        name = self.fresh_name(v)
        self.lines.append(f"{self.c_type(v)} {name};")
        start = 0
        args = op["args"]
        for k, a in enumerate(args):
            size = self.shape(a)[dim]
            source = list(coords)
            source[dim] = coords[dim] if start == 0 else f"({coords[dim]} - {start})"
            body, inner = self.branch(a, source)
            test = f"if ({coords[dim]} < {start + size}) {{"
            head = test if k == 0 else "} else {" if k == len(args) - 1 else "} else " + test
            self.lines.append(head)
            self.lines += [f"  {line}" for line in body] + [f"  {name} = {inner};"]
            start += size
        self.lines.append("}")
        self.memo[(v, tuple(coords))] = name
        return name

    def fresh_name(self, v):
        """A variable for value v, named as the reference program names it
        (inputs `a0`.., op results `t4`..; `u` for the values a lowering
        added), with a suffix only where the scope holds v at other
        coordinates too."""
        stem = f"a{v}" if v < self.n_in else self.op(v).get("name", f"t{v}")
        name, n = stem, 1
        while name in self.taken:
            n += 1
            name = f"{stem}_{n}"
        self.taken.add(name)
        return name

    def operand_coords(self, coords, shape, operand_shape):
        """Broadcasting: an operand's coordinates, right-aligned."""
        offset = len(shape) - len(operand_shape)
        return ["0" if size == 1 else coords[offset + d] for d, size in enumerate(operand_shape)]

    def expression(self, v, coords):
        op = self.op(v)
        fn, args = op["fn"], op["args"]
        if v in self.leaves:  # a name, or a name's element at the coordinates
            leaf = self.leaves[v]
            return leaf(coords) if callable(leaf) else leaf
        if fn in ("scalar", "full"):
            return constant_expression(op)
        if fn == "arange":  # the coordinate along its dim
            return f"(long long)({coords[op['ints']['dim'][0]]})"
        if fn == "index":  # the source at the coordinates its indices hold there
            where = [self.value(a, self.operand_coords(coords, self.shape(v), self.shape(a)))
                     for a in args[1:]]
            return self.value(args[0], where)
        if fn == "permute":
            dims = op["ints"]["dims"]
            source = [None] * len(dims)
            for d, p in enumerate(dims):
                source[p] = coords[d]
            return self.value(args[0], source)
        if fn == "expand":  # size-1 dims read at 0
            return self.value(args[0], self.operand_coords(coords, self.shape(v),
                                                           self.shape(args[0])))
        if fn == "slice":
            ints = op["ints"]
            source = [c if (o, st) == (0, 1) else
                      f"{o} + {c}" if st == 1 else f"{o} + {c} * {st}" if o else f"{c} * {st}"
                      for c, o, st in zip(coords, ints["offsets"], ints["strides"])]
            return self.value(args[0], source)
        if fn == "reshape":
            source = self.shape(args[0])
            kept = [c for c, size in zip(coords, self.shape(v)) if size != 1]
            if [s for s in self.shape(v) if s != 1] == [s for s in source if s != 1]:
                # Only size-1 dims come or go: the same coordinates.
                it = iter(kept)
                return self.value(args[0], ["0" if s == 1 else next(it) for s in source])
            split = split_coords(coords, self.shape(v), source)
            if split is not None:
                return self.value(args[0], split)
            linear = _linear(coords, self.shape(v))
            return self.value(args[0], _unravel(linear, source) if source else [])
        names = [self.value(a, self.operand_coords(coords, self.shape(v), self.shape(a)))
                 for a in args]
        return op_expression(op, names, [self.types[a]["dtype"] for a in args])


class ReductionEmitter(ValueEmitter):
    """The kernel of the program's reductions, or of `reductions` (a
    stage, emit_stages) with `loaded` those of earlier stages."""

    def __init__(self, program, reductions=None, loaded=None):
        super().__init__(program, loaded)
        self.reductions = reductions if reductions is not None else [
            self.n_in + i for i, op in enumerate(program["ops"]) if op["fn"] in REDUCING]
        if not self.reductions:
            raise Unsupported("no reduction")
        self.leaves = {v: f"red{j}" for j, v in enumerate(self.reductions)}
        first = self.op(self.reductions[0])
        self.full = self.shape(first["args"][0])
        self.dims = self.dims_of(first)
        for r in self.reductions:
            if self.shape(self.op(r)["args"][0]) != self.full or self.dims_of(self.op(r)) != \
                    self.dims:
                raise Unsupported("reductions over different shapes or dims")
        self.kept_dims = [d for d in range(len(self.full)) if d not in self.dims]
        self.kept_shape = [self.full[d] for d in self.kept_dims]
        self.reduced_shape = [self.full[d] for d in self.dims]
        self.extent = math.prod(self.reduced_shape)  # the block's size follows it
        self.kept_c = size_expression(self.kept_shape, wide=True)  # as the answer writes them
        self.extent_c = size_expression(self.reduced_shape, wide=True)

    def full_coords(self, r):
        """Coordinates in the full shape of reduced element r of this block's
        kept index k."""
        kept = dict(zip(self.kept_dims, _unravel("k", self.kept_shape)))
        reduced = dict(zip(self.dims, _unravel(r, self.reduced_shape)))
        return [kept.get(d, reduced.get(d)) for d in range(len(self.full))]

    def out_coords(self, out):
        """The block's coordinates in a result of the reduced shape."""
        shape = self.shape(out)
        kept = _unravel("k", self.kept_shape)
        if list(shape) == self.kept_shape:
            return kept
        if len(shape) == len(self.full):  # keepdim
            it = iter(kept)
            return ["0" if d in self.dims else next(it) for d in range(len(self.full))]
        raise Unsupported(f"result of shape {shape}")

    # --- the kernel ---------------------------------------------------------------
    def loop(self, body_of, indent="    "):
        """A pass of the block's threads over the reduced elements."""
        self.new_scope()
        tail = body_of("r")
        body = self.lines + tail
        return ([f"{indent}for (int64_t r = threadIdx.x; r < {self.extent_c}; "
                 "r += blockDim.x) {"] + [f"{indent}  {line}" for line in body] +
                [f"{indent}}}"])

    def reduction_code(self, j, v):
        op = self.op(v)
        fn, operand = op["fn"], op["args"][0]
        acc_t = self.c_type(operand)
        out = [f"    // reduction {j}: {fn} over dims {self.dims}"]
        coords = self.full_coords("r")

        if fn in ("argmax", "argmin"):
            out += [f"    {acc_t} best_v{j} = {'-INFINITY' if fn == 'argmax' else 'INFINITY'};",
                    f"    int64_t best_i{j} = {self.extent_c};"]
            out += self.loop(lambda r: [
                f"const {acc_t} x = {self.value(operand, coords)};",
                f"if (arg_better(x, {r}, best_v{j}, best_i{j}, {str(fn == 'argmax').lower()})) "
                f"{{ best_v{j} = x; best_i{j} = {r}; }}"])
            out.append(f"    const int64_t red{j} = block_arg_reduce(best_v{j}, best_i{j}, "
                       f"{str(fn == 'argmax').lower()});")
            return out
        if fn == "logsumexp":
            out.append(f"    {acc_t} m{j} = -INFINITY;")
            out += self.loop(lambda r: [f"m{j} = MaxOp()(m{j}, {self.value(operand, coords)});"])
            out.append(f"    m{j} = block_reduce(m{j}, MaxOp(), ({acc_t})-INFINITY);")
            out.append(f"    const {acc_t} shift{j} = isinf(m{j}) ? ({acc_t})0 : m{j};")
            out.append(f"    {acc_t} s{j} = 0;")
            out += self.loop(lambda r: [
                f"s{j} += expf({unfused_sub(self.value(operand, coords), f'shift{j}', acc_t)});"])
            out.append(f"    s{j} = block_reduce(s{j}, SumOp(), ({acc_t})0);")
            result = f"logf(s{j}) + shift{j}"
        elif acc_t == "bool":  # any, all: in an int, which warps shuffle
            identity = "0" if fn == "amax" else "1"
            out.append(f"    int acc{j} = {identity};")
            out += self.loop(lambda r: [
                f"acc{j} = {COMBINE[fn]}()(acc{j}, (int){self.value(operand, coords)});"])
            out.append(f"    acc{j} = block_reduce(acc{j}, {COMBINE[fn]}(), {identity});")
            result = f"acc{j} != 0"
        else:
            out.append(f"    {acc_t} acc{j} = {IDENTITY[fn]};")
            out += self.loop(lambda r: [
                f"acc{j} = {COMBINE[fn]}()(acc{j}, {self.value(operand, coords)});"])
            out.append(f"    acc{j} = block_reduce(acc{j}, {COMBINE[fn]}(), "
                       f"({acc_t}){IDENTITY[fn]});")
            result = f"acc{j}"
        rounding = ROUND.get(op["type"]["dtype"])
        if rounding:
            result = f"{rounding}({result})"
        out.append(f"    const {self.c_type(v)} red{j} = {result};")
        return out

    def kernel(self, in_params, out_params, kernel_name="reduce_kernel", outputs=None,
               out_names=None):
        """The kernel `kernel_name` storing `outputs` (the program's by default)
        to `out_names` (y0..)."""
        body = []
        for j, v in enumerate(self.reductions):
            body += self.reduction_code(j, v)
        outputs = self.p["outputs"] if outputs is None else outputs
        out_names = out_names or [f"y{slot}" for slot in range(len(outputs))]
        for target, o in zip(out_names, outputs):
            dtype = self.types[o]["dtype"]
            store = DTYPES[dtype].store if dtype in DTYPES else "{}"
            if list(self.shape(o)) == list(self.full):
                coords = self.full_coords("r")
                body.append(f"    // {target}: the full shape")
                body += self.loop(lambda r: [
                    f"{target}[{_linear(coords, self.full)}] = "
                    f"{store.format(self.value(o, coords))};"])
            elif math.prod(self.shape(o)) == math.prod(self.full):
                # The full shape viewed otherwise: the same elements in the
                # same order. Dims merged (a group norm's [N, G, C/G, *S]
                # back as [N, C, *S]) keep their coordinates; any other view
                # (an instance norm's [1, N*C, *S] as [N, C, *S]) unravels
                # the full shape's offset.
                full = self.full_coords("r")
                coords = merged_coords(full, self.full, self.shape(o)) or \
                    _unravel(_linear(full, self.full), self.shape(o))
                body.append(f"    // {target}: the full shape, viewed as "
                            f"{list(self.shape(o))}")
                body += self.loop(lambda r: [
                    f"{target}[{_linear(coords, self.shape(o))}] = "
                    f"{store.format(self.value(o, coords))};"])
            else:
                self.new_scope()
                name = self.value(o, self.out_coords(o))
                body.append(f"    // {target}: the reduced shape, by the first thread")
                body.append("    if (threadIdx.x == 0) {")
                body += [f"      {line}" for line in self.lines]
                body.append(f"      {target}[k] = {store.format(name)};")
                body.append("    }")
        return "\n".join(
            ["// One block a kept index; its threads stride over the reduced elements.",
             f"__global__ void {kernel_name}({', '.join(in_params + out_params)}) {{",
             f"  for (int64_t k = blockIdx.x; k < {self.kept_c}; k += gridDim.x) {{"]
            + body + ["  }", "}", ""])


HALF = ("float16", "bfloat16")


def lower_group_norm(op, args, add, reduce):
    """A group norm (float32; weight and bias as [1, G, C/G, 1]) over the
    [N, G, C/G, *S] view of its input: the mean and biased variance over
    all dims but the first two, the weight and bias broadcast there, then
    the view back (a merge of dims 1 and 2)."""
    shape = op["type"]["shape"]
    (groups,) = op["ints"]["groups"]
    n, channels, spatial = shape[0], shape[1], list(shape[2:])
    view = [n, groups, channels // groups] + spatial
    dims = list(range(2, len(view)))
    keep = [n, groups] + [1] * len(dims)
    x = add("reshape", [args[0]], view, "float32")
    count = add("scalar", [], [], "float32", value=float(math.prod(view[2:])),
                count_of=[s for s in view[2:] if s != 1])
    eps = add("scalar", [], [], "float32", value=op.get("value", 0.0))
    mean = add("div", [reduce("sum", x, dims, keep), count], keep, "float32")
    centred = add("sub", [x, mean], view, "float32")
    square = add("mul", [centred, centred], view, "float32")
    var = add("div", [reduce("sum", square, dims, keep), count], keep, "float32")
    scale = add("rsqrt", [add("add", [var, eps], keep, "float32")], keep, "float32")
    y = add("mul", [centred, scale], view, "float32")
    per_channel = [1, groups, channels // groups] + [1] * len(spatial)
    weight, bias = (add("reshape", [a], per_channel, "float32") for a in args[1:3])
    y = add("add", [add("mul", [y, weight], view, "float32"), bias], view, "float32")
    return add("reshape", [y], shape, "float32")


def lower_norms(program):
    """The program with each softmax, log-softmax, layer norm, RMS norm and
    group norm written as the reductions and elementwise ops that compute
    it, as PyTorch's kernels do: in float32 for half-precision inputs,
    rounded once at the end; the norms' biased variance from the mean."""
    n_in = len(program["inputs"])
    types = list(program["inputs"])
    ops, number = [], {i: i for i in range(n_in)}

    def add(fn, args, shape, dtype, **attrs):
        # A shift by the max or min of the same values: unfused_sub.
        if fn == "sub" and extreme_of(args[1], args[0]):
            attrs["unfused"] = True
        ops.append({"fn": fn, "args": list(args), "type": {"shape": list(shape),
                                                           "dtype": dtype}, **attrs})
        types.append(ops[-1]["type"])
        return n_in + len(ops) - 1

    def reduce(fn, value, dims, keep):
        shape = [s for d, s in enumerate(types[value]["shape"]) if d not in dims]
        out = add(fn, [value], shape, types[value]["dtype"], ints={"dims": dims})
        return add("reshape", [out], keep, types[value]["dtype"])

    def extreme_of(value, of):
        """Whether `value` is (a view of) the max or min of `of`."""
        while value >= n_in and ops[value - n_in]["fn"] in ("reshape", "expand"):
            value = ops[value - n_in]["args"][0]
        return value >= n_in and ops[value - n_in]["fn"] in ("amax", "amin") and \
            ops[value - n_in]["args"][0] == of

    for i, op in enumerate(program["ops"]):
        args = [number[a] for a in op["args"]]
        if op["fn"] == "group_norm":
            number[n_in + i] = lower_group_norm(op, args, add, reduce)
            continue
        if op["fn"] not in ("softmax", "log_softmax", "layer_norm", "rms_norm"):
            number[n_in + i] = add(op["fn"], args, op["type"]["shape"], op["type"]["dtype"],
                                   **{k: v for k, v in op.items()
                                      if k not in ("fn", "args", "type")})
            continue
        shape, dtype = op["type"]["shape"], op["type"]["dtype"]
        x = add("to", [args[0]], shape, "float32") if dtype in HALF else args[0]
        ints = op.get("ints", {})
        if op["fn"] in ("softmax", "log_softmax"):
            dims = [ints["dim"][0] % len(shape)]
        else:
            dims = list(range(len(shape) - ints["normalized"][0], len(shape)))
        keep = [1 if d in dims else s for d, s in enumerate(shape)]
        count = add("scalar", [], [], "float32", value=float(math.prod(shape[d] for d in dims)),
                    count_of=[shape[d] for d in dims if shape[d] != 1])
        if op["fn"] in ("softmax", "log_softmax"):
            shifted = add("sub", [x, reduce("amax", x, dims, keep)], shape, "float32")
            e = add("exp", [shifted], shape, "float32")
            total = reduce("sum", e, dims, keep)
            y = add("div", [e, total], shape, "float32") if op["fn"] == "softmax" else \
                add("sub", [shifted, add("log", [total], keep, "float32")], shape, "float32")
        else:
            eps = add("scalar", [], [], "float32", value=op.get("value", 0.0))
            if op["fn"] == "layer_norm":
                mean = add("div", [reduce("sum", x, dims, keep), count], keep, "float32")
                centred = add("sub", [x, mean], shape, "float32")
                square = add("mul", [centred, centred], shape, "float32")
            else:
                centred = x
                square = add("mul", [x, x], shape, "float32")
            var = add("div", [reduce("sum", square, dims, keep), count], keep, "float32")
            scale = add("rsqrt", [add("add", [var, eps], keep, "float32")], keep, "float32")
            y = add("mul", [centred, scale], shape, "float32")
            affine = ints.get("affine", [0, 0])
            if affine[0]:
                y = add("mul", [y, args[1]], shape, "float32")
            if affine[1]:
                y = add("add", [y, args[2]], shape, "float32")
        number[n_in + i] = add("to", [y], shape, dtype) if dtype in HALF else y
    # Kernel variables keep the reference program's names (t4 for its
    # value 4, or the name an op carries: a chain's stage keeps the whole
    # program's); the values the lowering added are u-named.
    named = {v: o for o, v in number.items() if v >= n_in}
    for k, op in enumerate(ops):
        v = n_in + k
        op["name"] = program["ops"][named[v] - n_in].get("name", f"t{named[v]}") \
            if v in named else f"u{v}"
    return {"inputs": program["inputs"], "ops": ops,
            "outputs": [number[o] for o in program["outputs"]]}


def block_threads(extent):
    """Threads of a block that walks `extent` elements: a power of two from
    a warp to 256, no more than the elements need."""
    threads = 32
    while threads < 256 and threads < extent:
        threads *= 2
    return threads


def used_helpers(kernel):
    """The helpers `kernel` calls, in dependency order."""
    calls = lambda name: re.search(rf"\b{name}\b", kernel) is not None
    helpers = [text for name, text in COMBINE_OPS.items() if calls(name)]
    if calls("block_reduce"):
        helpers.append(BLOCK_REDUCE)
    if calls("block_arg_reduce"):
        helpers.append(BLOCK_ARG_REDUCE)
    return helpers


def emit(program, signature):
    """The CUDA source (kernels and `dice_forward` with exactly `signature`)
    computing `program`. Raises Unsupported for programs it does not take."""
    e = ReductionEmitter(lower_norms(program))

    def kernel_and_helpers(in_params, out_params, _out_dtypes):
        kernel = e.kernel(in_params, out_params)
        return "\n".join([helper.strip("\n") + "\n" for helper in used_helpers(kernel)] +
                         [kernel])

    return one_kernel_source(e.p, signature, kernel_and_helpers, lambda pointers: [
        f"  const int blocks = (int)std::min<int64_t>({e.kept_c}, 65535);",
        f"  reduce_kernel<<<blocks, {block_threads(e.extent)}, 0, "
        f"c10::cuda::getCurrentCUDAStream()>>>("
        f"{', '.join(pointers)});"])
