"""Shapes the engine draws: ranks 1-5, sizes that are multiples of 4 or 32
as often as sizes that are not, from a handful of elements to 2^24."""

import math

MAX_ELEMENTS = 1 << 24
ROUND_SIZES = (1, 2, 4, 8, 16, 32, 64, 96, 128, 256, 384, 512, 768, 1024, 2048, 4096)


def draw_size(rng, cap):
    if rng.random() < 0.5:
        choices = [s for s in ROUND_SIZES if s <= cap and s > 1] or [1]
        return rng.choice(choices)
    # log-uniform in [2, cap], never a multiple of 4
    size = int(math.exp(rng.uniform(math.log(2), math.log(max(cap, 2)))))
    size = max(2, min(size, cap))
    if size % 4 == 0:
        size = size + 1 if size + 1 <= cap else max(size - 1, 1)
    return size


def draw_shape(rng):
    """A shape of rank 1-5 whose element count is log-uniform-ish up to
    MAX_ELEMENTS."""
    rank = rng.choice((1, 2, 2, 3, 3, 4, 5))
    budget = int(math.exp(rng.uniform(math.log(16), math.log(MAX_ELEMENTS))))
    shape = []
    for d in range(rank):
        left = rank - d
        cap = max(1, int(round((budget / max(math.prod(shape), 1)) ** (1 / left))) * 2)
        shape.append(draw_size(rng, min(cap, 8192)))
    while math.prod(shape) > MAX_ELEMENTS:
        i = shape.index(max(shape))
        shape[i] = max(1, shape[i] // 2)
    return tuple(shape)


def broadcast_pattern(rng, shape):
    """A shape that broadcasts to `shape`: the same; a row (the last dim);
    a column (the last but one, kept as [..., n, 1]); a trailing suffix of
    lower rank; or the same rank with some dims 1."""
    rank = len(shape)
    kind = rng.choice(("same", "same", "row", "column", "suffix", "ones"))
    if kind == "same" or rank == 1:
        return tuple(shape)
    if kind == "row":
        return (shape[-1],)
    if kind == "column":
        return (shape[-2], 1)
    if kind == "suffix":
        return tuple(shape[rng.randint(1, rank - 1):])
    ones = [d for d in range(rank) if shape[d] != 1]
    dropped = set(rng.sample(ones, rng.randint(1, max(1, len(ones) - 1)))) if ones else set()
    return tuple(1 if d in dropped else s for d, s in enumerate(shape))
