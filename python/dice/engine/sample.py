"""Stratified samples of engine rows, for the checks: every emitter x dtype
x shape class gets its share, so a rare cell is never left to chance."""

import random
from collections import defaultdict

from dice.engine.emit_chain import fuse_attention, stages_of
from dice.engine.program import output_type


def emitter_of(row):
    """Which code path of the emitter the row's kernel takes."""
    source = row["middle"]
    if row["family"] == "convolution":
        return convolution_path(row["program"])
    if row["family"] == "chain":  # the families of its stages, an attention one fused
        stages = fuse_attention(row["program"], stages_of(row["program"]))
        return "chain-" + "-".join(sorted({f for f, _ in stages}))
    if row["family"] == "normalization" and "fused_kernel" in source:
        return "normalization-elementwise"  # batch norm in eval mode
    if "auto w0 = torch::empty" in source:
        return f"{row['family']}-stages"  # kernels in turn, buffers between
    if row["family"] != "elementwise":
        return row["family"]
    return "elementwise-vec4" if "fused_kernel_vec4" in source else "elementwise-scalar"


def convolution_path(program):
    """A convolution's kernel walks its group's channels (grouped), one
    channel (depthwise) or all of them, over two or three window dims (a
    1-D convolution is the 2-D one of [N, C, L, 1] views), or an input
    spread out into zeros (transposed; over one, two or three)."""
    (conv,) = [op for op in program["ops"] if op["fn"] == "conv"]
    n_in = len(program["inputs"])
    source = conv["args"][0]
    types = program["inputs"] + [op["type"] for op in program["ops"]]
    weight = types[conv["args"][1]]["shape"]  # [F, C/G, *K]
    if source >= n_in and program["ops"][source - n_in]["fn"] == "insert_slice":
        # Reads its input spread out into zeros.
        return "convolution-transposed" + ("-3d" if len(weight) == 5 else "")
    (groups,) = conv["ints"]["groups"]
    form = "dense" if groups == 1 else \
        "depthwise" if weight[1] == 1 and weight[0] == groups else "grouped"
    return f"convolution-{form}" + ("-3d" if len(weight) == 5 else "")


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
