"""Stratified samples of engine rows, for the checks: every emitter x dtype
x shape class gets its share, so a rare cell is never left to chance."""

import random
from collections import defaultdict

from dice.engine.program import output_type


def emitter_of(row):
    """Which code path of the emitter the row's kernel takes."""
    source = row["middle"]
    if row["family"] != "elementwise":
        return row["family"]
    return "elementwise-vec4" if "fused_kernel_vec4" in source else "elementwise-scalar"


def shape_class(row):
    """(alignment, broadcast) of the row's request: what changes the
    kernel's indexing and its vector path. Sizes and ranks vary within."""
    program = row["program"]
    out = output_type(program)["shape"]
    aligned = "last%4==0" if out and out[-1] % 4 == 0 else "last%4!=0"
    broadcast = "broadcast" if any(i["shape"] != out for i in program["inputs"]) else "same"
    return aligned, broadcast


def cell_of(row):
    return (emitter_of(row), row["dtype"]) + shape_class(row)


def stratified(rows, per_cell, seed=0, total=None):
    """Up to `per_cell` rows of every cell (all of a smaller cell), then,
    if `total` is given, more rows drawn evenly across cells up to it."""
    rng = random.Random(seed)
    cells = defaultdict(list)
    for row in rows:
        cells[cell_of(row)].append(row)
    for members in cells.values():
        rng.shuffle(members)
    chosen = {cell: members[:per_cell] for cell, members in sorted(cells.items())}
    if total:
        taken = {cell: len(v) for cell, v in chosen.items()}
        while sum(taken.values()) < total:
            grew = False
            for cell, members in sorted(cells.items()):
                if taken[cell] < len(members) and sum(taken.values()) < total:
                    chosen[cell].append(members[taken[cell]])
                    taken[cell] += 1
                    grew = True
            if not grew:
                break
    return [row for members in chosen.values() for row in members]
