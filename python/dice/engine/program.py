"""Builds reference programs (docs/reference-program.md) in the compiler's
canonical form, so that a drawn program is the one the compiler renders
when it exports the program's own printed PyTorch form.

What the form holds (held by test/python/test_engine.py through the
torch-mlir export path, see also docs/corpus.md):

- constants (`scalar`, `full`) come before every other op, in the order
  the other ops first read them, and hold values that the constant's dtype
  represents exactly (a float32 0.1 comes
  back as a float64 constant and a cast);
- the inputs are numbered in the order a depth-first walk from the outputs,
  operands left to right, first reaches them (an `index` op's indices
  before its source);
- an operand of lower rank is reshaped to the full rank, with leading 1s
  (or, for a vector along another dim, at that dim: `Value.lift`), right
  before each op that broadcasts it (a reshape of its own for every such
  op); a constant that is not a Python number beside a tensor (a
  `full`) has the full rank from the start;
- apart from those reshapes no op is computed twice (the compiler's CSE
  merges equal ops), and every op reaches an output;
- the other ops stand in the order they were drawn, which is the order the
  printed program computes them.

The builder also tracks a bound on each value's magnitude, which the
grammar uses to keep functions inside their domains (the verifier's
heavy-tailed trial draws inputs up to +-100).
"""

import json
import math
import struct
from dataclasses import dataclass, field, replace

from dice.reference_ops import check_op

FLOATS = ("float32", "float16", "bfloat16")
# A bound on |input| under every trial distribution of the verifier.
INPUT_BOUND = 100.0
# Ops that every implementation computes alike (IEEE-rounded arithmetic,
# selects, casts): a value made only of them is the same bits in a kernel
# and in PyTorch; a transcendental function's may differ in the last place.
EXACT = {"neg", "abs", "floor", "ceil", "round", "trunc", "where", "gt", "ge", "lt", "le",
         "eq", "ne", "logical_and", "logical_or", "logical_not", "to", "reshape", "add",
         "sub", "mul", "div", "maximum", "minimum", "relu6", "hardsigmoid", "hardswish",
         "leaky_relu"}


def output_type(program):
    """The type of a program's first result (an op: programs the engine
    draws never return an input)."""
    return program["ops"][program["outputs"][0] - len(program["inputs"])]["type"]


def holds_exactly(value, dtype):
    """Whether `dtype` holds the number exactly (the compiler renders any
    other constant as a float64 tensor and a cast)."""
    if dtype == "float16":
        return abs(value) <= 65504 and struct.unpack("<e", struct.pack("<e", value))[0] == value
    as_float = struct.unpack("<f", struct.pack("<f", value))[0]
    if dtype == "bfloat16":
        return as_float == value and struct.unpack("<I", struct.pack("<f", value))[0] & 0xFFFF == 0
    return dtype == "float64" or as_float == value


def to_bfloat16(value):
    """`value` rounded to bfloat16 as PyTorch rounds a float64 number:
    to float32, then to nearest bfloat16 (ties to even); as a float."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def rounded(value, dtype):
    """`value` as half-precision `dtype` holds it (round to nearest)."""
    if dtype == "bfloat16":
        return to_bfloat16(value)
    return struct.unpack("<e", struct.pack("<e", value))[0]


def index_bounds(program):
    """For each input, the exclusive bound on its values where it reaches
    an `index` operand (through views, casts, a cat or a where's values):
    the smallest size it indexes; 0 for none. The rule of the C++
    ReferenceProgram::indexBounds, by which the verifier and get_inputs draw
    indices in range."""
    n_in = len(program["inputs"])
    types = program["inputs"] + [op["type"] for op in program["ops"]]
    bounds = [0] * n_in
    for op in program["ops"]:
        if op["fn"] != "index":
            continue
        source = types[op["args"][0]]["shape"]
        for operand, size in zip(op["args"][1:], source):
            stack = [operand]
            while stack:
                v = stack.pop()
                if v < n_in:
                    if not program["inputs"][v]["dtype"].startswith("float"):
                        bounds[v] = min(bounds[v], size) if bounds[v] else max(size, 1)
                    continue
                producer = program["ops"][v - n_in]
                if producer["fn"] in ("reshape", "expand", "permute", "slice", "to", "cat"):
                    stack.extend(producer["args"])
                elif producer["fn"] == "where":
                    stack.extend(producer["args"][1:])
    return bounds


@dataclass(frozen=True)
class Value:
    """A value of the program being built: its number in the builder (not
    the final numbering), shape, dtype, and bounds on what it holds."""
    key: int
    shape: tuple
    dtype: str
    lo: float = -INPUT_BOUND
    hi: float = INPUT_BOUND
    exact: bool = True  # only EXACT ops between the inputs and it
    # The shape a vector along one dim of the program takes where an op
    # broadcasts it (`w.view(1, -1, 1, 1)`); None: leading 1s.
    lift: tuple = None

    @property
    def rank(self):
        return len(self.shape)

    @property
    def bound(self):
        return max(abs(self.lo), abs(self.hi))


def broadcast_shape(*shapes):
    rank = max(len(s) for s in shapes)
    out = []
    for d in range(rank):
        sizes = {s[d - rank + len(s)] for s in shapes if d - rank + len(s) >= 0} - {1}
        if len(sizes) > 1:
            raise ValueError(f"shapes {shapes} do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


@dataclass
class _Node:
    fn: str
    args: tuple
    shape: tuple
    dtype: str
    attrs: dict = field(default_factory=dict)


def window_sizes(sizes, kernel, stride, dilation):
    """The output sizes of windows (a pool's, a convolution's) over `sizes`,
    none of them padded."""
    return tuple((s - d * (k - 1) - 1) // st + 1
                 for s, k, st, d in zip(sizes, kernel, stride, dilation))


class ProgramBuilder:
    def __init__(self):
        self._nodes = []          # ("input", ...) or ops, in creation order
        self._memo = {}           # an op's identity -> its value, so none is computed twice

    # --- values ------------------------------------------------------------
    def input(self, shape, dtype, lo=-INPUT_BOUND, hi=INPUT_BOUND):
        self._nodes.append(_Node("input", (), tuple(shape), dtype))
        return Value(len(self._nodes) - 1, tuple(shape), dtype, lo, hi)

    def scalar(self, value, dtype):
        """A 0-d constant (a Python number in the printed program where
        torch takes one, docs/reference-program.md "Constants")."""
        return self._add("scalar", (), (), dtype, {"value": value}, value, value)

    def full(self, value, shape, dtype):
        return self._add("full", (), tuple(shape), dtype, {"value": value}, value, value)

    def op(self, fn, args, dtype=None, lo=None, hi=None, shaped_like_first=False, **attrs):
        """An elementwise op over `args`, broadcast together: operands of
        lower rank than the result (0-d scalars aside) are reshaped first.
        `shaped_like_first`: an op whose result has its first operand's
        shape and whose other operands keep theirs (a norm's weight)."""
        lift = None
        lifts = {a.lift for a in args if any(size != 1 for size in a.shape)}
        if shaped_like_first:
            shape = args[0].shape
        elif len(lifts) == 1 and None not in lifts:
            # Vectors of one view, computed as vectors: the result is one too.
            shape, lift = broadcast_shape(*(a.shape for a in args)), lifts.pop()
        else:
            shape = broadcast_shape(*(a.lift or a.shape for a in args))
            args = tuple(self._lift(a, len(shape)) for a in args)
        dtype = dtype or (args[1] if fn == "where" else args[0]).dtype
        lo = -INPUT_BOUND if lo is None else lo
        hi = INPUT_BOUND if hi is None else hi
        exact = fn in EXACT and all(a.exact for a in args)
        value = self._add(fn, tuple(a.key for a in args), shape, dtype, attrs, lo, hi, exact)
        return replace(value, lift=lift)

    def reduce(self, fn, value, dims, dtype=None, lo=None, hi=None):
        """A reduction of `value` over `dims` (no keepdim): `sum amax amin
        prod logsumexp` take `dims`, `argmax argmin` one `dim`."""
        dims = sorted(d % value.rank for d in dims)
        shape = tuple(s for d, s in enumerate(value.shape) if d not in dims)
        key = "dim" if fn in ("argmax", "argmin") else "dims"
        dtype = dtype or ("int64" if key == "dim" else value.dtype)
        lo = -INPUT_BOUND if lo is None else lo
        hi = INPUT_BOUND if hi is None else hi
        return self._add(fn, (value.key,), shape, dtype, {"ints": {key: dims}}, lo, hi, False)

    def permute(self, value, dims):
        shape = tuple(value.shape[d] for d in dims)
        return self._add("permute", (value.key,), shape, value.dtype,
                         {"ints": {"dims": list(dims)}}, value.lo, value.hi, value.exact)

    def matmul(self, a, b, lo=None, hi=None):
        """a @ b, 2-D or batched with the same batch."""
        shape = a.shape[:-1] + b.shape[-1:]
        lo = -INPUT_BOUND if lo is None else lo
        hi = INPUT_BOUND if hi is None else hi
        return self._add("matmul", (a.key, b.key), shape, a.dtype, {}, lo, hi, False)

    def pad(self, value, low, high, fill):
        """`F.pad` of `value` by `low` and `high` elements per dim, with
        `fill` (a number, or "-inf" before a max pool)."""
        shape = tuple(s + a + b for s, a, b in zip(value.shape, low, high))
        attrs = {"ints": {"low": list(low), "high": list(high)}}
        if fill != 0:
            attrs["value"] = fill
        # -inf padding only ever meets a max over windows with a real element.
        lo, hi = (value.lo, value.hi) if fill == "-inf" else (min(value.lo, fill),
                                                              max(value.hi, fill))
        return self._add("pad", (value.key,), shape, value.dtype, attrs, lo, hi, value.exact)

    def expand(self, value, shape):
        """`value.expand(shape)`: size-1 dims repeated (the same rank)."""
        return self._add("expand", (value.key,), tuple(shape), value.dtype, {}, value.lo,
                         value.hi, value.exact)

    def conv(self, x, w, stride, dilation, groups=1, lo=None, hi=None):
        """`F.conv{n}d(x, w, groups=groups)` without padding or bias (the
        compiler renders them as a `pad` before and an `add` after)."""
        kernel = w.shape[2:]
        out = window_sizes(x.shape[2:], kernel, stride, dilation)
        attrs = {"ints": {"stride": list(stride), "padding": [0] * len(kernel),
                          "dilation": list(dilation), "groups": [groups]}}
        lo = -INPUT_BOUND if lo is None else lo
        hi = INPUT_BOUND if hi is None else hi
        return self._add("conv", (x.key, w.key), (x.shape[0], w.shape[0]) + out, x.dtype,
                         attrs, lo, hi, False)

    def insert_slice(self, source, dest, offsets, strides):
        """`dest` with `source` written into it at `offsets`, every
        `strides` elements along each dim (a transposed convolution's
        input, spread out into zeros)."""
        attrs = {"ints": {"offsets": list(offsets), "sizes": list(source.shape),
                          "strides": list(strides)}}
        return self._add("insert_slice", (source.key, dest.key), dest.shape, dest.dtype, attrs,
                         min(source.lo, dest.lo), max(source.hi, dest.hi),
                         source.exact and dest.exact)

    def cat(self, values, dim):
        """`torch.cat(values, dim)`: the same shapes but along `dim`."""
        shape = list(values[0].shape)
        shape[dim] = sum(v.shape[dim] for v in values)
        return self._add("cat", tuple(v.key for v in values), tuple(shape), values[0].dtype,
                         {"ints": {"dim": [dim]}}, min(v.lo for v in values),
                         max(v.hi for v in values), all(v.exact for v in values))

    def slice(self, value, offsets, sizes, strides):
        """`value[o:o+(n-1)*s+1:s, ...]` per dim."""
        attrs = {"ints": {"offsets": list(offsets), "sizes": list(sizes),
                          "strides": list(strides)}}
        return self._add("slice", (value.key,), tuple(sizes), value.dtype, attrs, value.lo,
                         value.hi, value.exact)

    def pool(self, fn, value, ints):
        """`max_pool` or `sum_pool` (`ints`: kernel, stride, padding, and
        dilation for max) over the trailing dims of `value`."""
        kernel, stride = ints["kernel"], ints["stride"]
        dilation = ints.get("dilation", [1] * len(kernel))
        out = window_sizes(value.shape[-len(kernel):], kernel, stride, dilation)
        count = math.prod(kernel)
        lo, hi = (value.lo, value.hi) if fn == "max_pool" else (value.lo * count,
                                                                value.hi * count)
        return self._add(fn, (value.key,), value.shape[:-len(kernel)] + out, value.dtype,
                         {"ints": {k: list(v) for k, v in ints.items()}}, lo, hi,
                         value.exact and fn == "max_pool")

    def arange(self, shape, dim, shared=True):
        """`torch.arange(shape[dim]).reshape(shape)`: each element its
        coordinate along `dim` (a loop index, int64)."""
        return self._add("arange", (), tuple(shape), "int64", {"ints": {"dim": [dim]}}, 0,
                         shape[dim] - 1, shared=shared)

    def arange_along(self, rank, dim, size, shared=True):
        """`arange(size)` viewed along `dim` of a value of rank `rank` (1s
        elsewhere)."""
        return self.arange(tuple(size if d == dim else 1 for d in range(rank)), dim, shared)

    def flip(self, value, dim):
        """`value.flip(dim)` as the compiler renders it: `value` indexed by
        an arange along each dim, reversed along `dim` (`full(n - 1) -
        arange`, shared by every flip of that dim and size); the other
        aranges each flip's own (the compiler merges none)."""
        size, rank = value.shape[dim], value.rank
        last = self.full(size - 1, (1,) * rank, "int64")
        reversed_index = self.op("sub", [last, self.arange_along(rank, dim, size)], lo=0,
                                 hi=size - 1)
        indices = [reversed_index if d == dim else self.arange_along(rank, d, s, shared=False)
                   for d, s in enumerate(value.shape)]
        return self.index(value, indices)

    def index(self, source, indices):
        """`source[i0, i1, ...]`: advanced indexing of every dim of
        `source` by int64 `indices`, broadcast together."""
        shape = broadcast_shape(*(i.shape for i in indices))
        return self._add("index", (source.key,) + tuple(i.key for i in indices), shape,
                         source.dtype, {}, source.lo, source.hi, source.exact)

    def reshape(self, value, shape, shared=True):
        """`value.reshape(shape)`; not `shared`: a reshape of its own even
        where an equal one exists (the compiler lifts a 0-d operand once
        for each op that reads it)."""
        return self._add("reshape", (value.key,), tuple(shape), value.dtype, {}, value.lo,
                         value.hi, value.exact, shared=shared)

    # Each op lifts its lower-rank operands with a reshape of its own, as
    # torch-mlir does. A grammar sets this to a channel count where the
    # compiler's reshape propagation leaves one lift for all readers of an
    # operand that spans that many channels (dim 1 of the lifted shape).
    share_lifts = 0

    def _lift(self, value, rank):
        if value.lift and len(value.lift) == rank:
            shape = value.lift
        elif value.rank in (0, rank):
            return value
        else:
            shape = (1,) * (rank - value.rank) + value.shape
        return self._add("reshape", (value.key,), shape, value.dtype, {}, value.lo, value.hi,
                         value.exact, shared=self.share_lifts > 1 and shape[1] == self.share_lifts)

    def _add(self, fn, args, shape, dtype, attrs, lo, hi, exact=True, shared=True):
        identity = (fn, args, shape, dtype, json.dumps(attrs, sort_keys=True))
        if not shared:  # a new op even where an equal one exists
            identity += (len(self._nodes),)
        if identity not in self._memo:
            self._nodes.append(_Node(fn, args, shape, dtype, dict(attrs)))
            self._memo[identity] = len(self._nodes) - 1
        key = self._memo[identity]
        return Value(key, shape, dtype, min(lo, hi), max(lo, hi), exact)

    # --- the program ---------------------------------------------------------
    def build(self, outputs):
        """The reference program (JSON-ready dict) returning `outputs`, in
        canonical form: dead ops dropped, constants first, inputs numbered
        by first use."""
        live = set()
        stack = [v.key for v in outputs]
        while stack:
            key = stack.pop()
            if key not in live:
                live.add(key)
                stack.extend(self._nodes[key].args)
        ops = [k for k, n in enumerate(self._nodes) if k in live and n.fn != "input"]
        constants = [k for k in ops if self._nodes[k].fn in ("scalar", "full")]
        rest = [k for k in ops if k not in constants]
        first_reader = {}
        for position, k in enumerate(rest):
            for a in self._nodes[k].args:
                first_reader.setdefault(a, position)
        constants.sort(key=lambda k: first_reader.get(k, len(rest)))
        inputs, seen = [], set()
        stack = [v.key for v in reversed(outputs)]
        while stack:  # depth first, operands left to right
            key = stack.pop()
            if key in seen:
                continue
            seen.add(key)
            node = self._nodes[key]
            if node.fn == "input":
                inputs.append(key)
            # An index reads its source from outside the loop over its
            # indices: the compiler numbers the indices' inputs first.
            args = node.args[1:] + node.args[:1] if node.fn == "index" else node.args
            stack.extend(reversed(args))
        number = {k: i for i, k in enumerate(inputs + constants + rest)}
        program = {"inputs": [{"shape": list(self._nodes[k].shape),
                               "dtype": self._nodes[k].dtype} for k in inputs],
                   "ops": [], "outputs": [number[v.key] for v in outputs]}
        for k in constants + rest:
            node = self._nodes[k]
            op = {"fn": node.fn, "args": [number[a] for a in node.args],
                  "type": {"shape": list(node.shape), "dtype": node.dtype}}
            op.update(node.attrs)
            # The table the compiler reads programs with: a grammar that
            # drew an op it does not know, or without an attribute the op
            # needs, fails here rather than in every tool downstream.
            if problem := check_op(op, len(program["ops"])):
                raise ValueError(f"the engine built a program outside the vocabulary: {problem}")
            program["ops"].append(op)
        return program
