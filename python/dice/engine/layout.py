"""The layout grammar: data movement with elementwise work around it.
One main op, as the compiler renders it (docs/reference-program.md):
`cat` of 2-3 operands along any dim (each a new input of the same shape
but that dim's size, with its own prologue half the time), `permute` by a
permutation that moves something, a `slice` of 1-3 dims, each with an
offset and a stride (a chain of one-dim slices, as the compiler renders a
subscript that slices several dims), or a constant `pad` (zero
or another value) of one or two dims, or a gather by int64 indices: an
embedding (a table's rows), an `index_select` or a `torch.gather` along
any dim; an
elementwise prologue (0-1 productions, on the operand; none on a gather's
source, which the compiler computes apart) and epilogue (0-2). Ranks 2-4."""

import math

from dice.engine.elementwise import Grammar
from dice.engine.program import ProgramBuilder
from dice.engine.shapes import MAX_ELEMENTS, draw_shape

KINDS = ("cat", "permute", "slice", "pad", "embedding", "index_select", "gather")
# Rows of an embedding table.
TABLE_ROWS = (10, 16, 50, 100, 128, 1000, 4096, 30522)


def _no_unit_dims(shape):
    """`shape` with its 1s made 2: a gather's arange along a dim of one
    element comes back from the compiler as a constant 0, another form."""
    return tuple(max(n, 2) for n in shape)


class LayoutGrammar(Grammar):
    def __init__(self, rng, exclude=()):
        super().__init__(rng, exclude)
        self.kinds = [k for k in KINDS if k not in exclude]

    def base_shape(self):
        shape = ()
        while not 2 <= len(shape) <= 4 or max(shape) < 3:
            shape = draw_shape(self.rng)
        shape = list(shape)
        while math.prod(shape) > MAX_ELEMENTS // 4:  # a cat of three stays within 2^24
            i = shape.index(max(shape))
            shape[i] = max(1, shape[i] // 2)
        return tuple(shape)

    def moved_operand(self, b, shape):
        """A new input of `shape`, with a prologue half the time."""
        v = self.new_input(b, shape)
        return self.unary(b, v) if self.rng.random() < 0.5 else v

    def cat(self, b, shape):
        rng = self.rng
        dim = rng.randrange(len(shape))
        parts = []
        for _ in range(rng.choice((2, 2, 3))):
            sizes = list(shape)
            sizes[dim] = max(1, shape[dim] // rng.choice((1, 2, 3)) + rng.choice((0, 0, 1)))
            parts.append(self.moved_operand(b, tuple(sizes)))
        return b.cat(parts, dim)

    def permute(self, b, shape):
        dims = list(range(len(shape)))
        while dims == sorted(dims):
            self.rng.shuffle(dims)
        return b.permute(self.moved_operand(b, shape), dims)

    def slice(self, b, shape):
        """A slice of 1-3 dims, each with an offset and a stride, as the
        compiler renders a subscript: one slice per sliced dim, in dim
        order, each over the result of the one before."""
        rng = self.rng
        v = self.moved_operand(b, shape)
        sliceable = [d for d, n in enumerate(shape) if n > 1]  # base_shape has one
        moved = sorted(rng.sample(sliceable, min(len(sliceable), rng.choice((1, 1, 2, 3)))))
        for d in moved:
            n = v.shape[d]
            stride = rng.choice((1, 1, 2, 3))
            offset = rng.randrange(0, max(1, n // 3))
            most = (n - 1 - offset) // stride + 1
            size = rng.randint(max(1, most // 2), most)
            if (offset, size, stride) == (0, n, 1):
                offset, size = 1, n - 1
            offsets, sizes, strides = [0] * v.rank, list(v.shape), [1] * v.rank
            offsets[d], sizes[d], strides[d] = offset, size, stride
            v = b.slice(v, offsets, sizes, strides)
        return v

    def pad(self, b, shape):
        rng = self.rng
        low, high = [0] * len(shape), [0] * len(shape)
        for d in rng.sample(range(len(shape)), rng.randint(1, min(2, len(shape)))):
            low[d], high[d] = rng.choice(((1, 1), (0, 2), (2, 0), (1, 3), (3, 2)))
        fill = rng.choice((0.0, 0.0, 1.0, -0.5))
        return b.pad(self.moved_operand(b, shape), low, high, fill)

    def embedding(self, b, shape):
        """`F.embedding(idx, table)` as the compiler renders it: the table
        indexed by the indices viewed with a trailing 1 and by an arange
        along the embedding dim (`table[idx.reshape(*S, 1), arange(D)]`);
        indices of rank 1-3, the table's dtype any float."""
        rng = self.rng
        shape = _no_unit_dims(shape)
        dim = shape[-1]
        rows = rng.choice([r for r in TABLE_ROWS if r * dim <= MAX_ELEMENTS])
        lead = shape[:-1][:3] or (1,)
        idx = b.input(lead, "int64", lo=0, hi=rows - 1)
        table = b.input((rows, dim), self.dtype)
        return b.index(table, [b.reshape(idx, lead + (1,)),
                               b.arange((1,) * len(lead) + (dim,), len(lead))])

    def index_select(self, b, shape):
        """`torch.index_select(x, dim, idx)` of a 1-D `idx` (`x[idx]` for
        dim 0), as the compiler renders it: x indexed by idx viewed along
        `dim` and by an arange along each other dim (torch-mlir's wrap of
        negative indices folded into the index, as the compiler folds it)."""
        rng = self.rng
        shape = _no_unit_dims(shape)
        dim = rng.randrange(len(shape))
        count = rng.choice((1, 2, 3, 5, 8, 16, 31, 64, 100))
        idx = b.input((count,), "int64", lo=0, hi=shape[dim] - 1)
        # Each dim's index in order (the order of the compiler's form of
        # the printed program): the indices viewed along `dim`, an arange
        # along each other.
        indices = []
        for d, n in enumerate(shape):
            view = tuple(count if e == d else 1 for e in range(len(shape)))
            indices.append(b.reshape(idx, view) if d == dim else
                           b.arange(tuple(n if e == d else 1 for e in range(len(shape))), d))
        # The source as it is: the compiler computes a prologue on it apart,
        # outside the gather's request.
        return b.index(b.input(shape, self.dtype), indices)

    def gather(self, b, shape):
        """`torch.gather(x, dim, idx)` as the compiler renders it: x indexed
        by idx along `dim` and by an arange along each other dim of idx
        (whose sizes are at most x's there, any along `dim`)."""
        rng = self.rng
        shape = _no_unit_dims(shape)
        dim = rng.randrange(len(shape))
        sizes = [rng.randint(1, 2 * n) if d == dim else n if rng.random() < 0.7 else
                 rng.randint(2, n) for d, n in enumerate(shape)]
        while math.prod(sizes) > MAX_ELEMENTS // 4:
            sizes[sizes.index(max(sizes))] //= 2  # the largest is at least 2
        idx = b.input(tuple(sizes), "int64", lo=0, hi=shape[dim] - 1)
        indices = [idx if d == dim else
                   b.arange(tuple(n if e == d else 1 for e, n in enumerate(sizes)), d)
                   for d in range(len(shape))]
        return b.index(b.input(shape, self.dtype), indices)

    def draw(self, size=None):
        rng = self.rng
        self.used = []
        kind = rng.choice(self.kinds)
        self.dtype = rng.choice(("float32", "float32", "float16", "bfloat16"))
        self.compute_dtype = self.dtype
        b = ProgramBuilder()
        v = getattr(self, kind)(b, self.base_shape())
        self.used.append(kind)
        self.shape = v.shape
        return self.finish(b, v)
