"""The reference program's one op table (include/dice/Reference/RefOps.def)
as Python reads it: what it says of each op holds against PyTorch itself,
and the data engine's programs are checked against it.
"""

from functools import reduce

import pytest
import torch

from dice import reference_ops
from dice.engine.program import ProgramBuilder


def test_the_table_reads_whole():
    ops = reference_ops.load()
    text = reference_ops.TABLE.read_text()
    entries = [line for line in text.splitlines() if line.startswith("DICE_REF_")
               and not line.startswith("DICE_REF_OP(Enum")]
    assert len(ops) == len(entries)  # no two entries share a name
    assert all(name == name.lower() for name in ops)
    assert ops["conv"].attrs == ("stride", "padding", "dilation", "groups")
    assert (ops["cat"].min_args, ops["cat"].max_args) == (1, -1)
    assert ops["remainder"].torch == "torch.fmod"
    assert ops["gelu_tanh"].category == "Compound"


@pytest.mark.parametrize("name", [n for n, op in reference_ops.load().items() if op.torch])
def test_each_torch_spelling_is_a_torch_function(name):
    # The printer writes these calls into the program the model reads and
    # PyTorch runs: each must name a real function.
    spelled = reference_ops.load()[name].torch
    function = reduce(getattr, spelled.split(".")[1:], torch)
    assert callable(function), spelled


def test_check_op_says_what_is_wrong():
    check = reference_ops.check_op
    assert check({"fn": "add", "args": [0, 1]}) == ""
    assert "unknown operation" in check({"fn": "frobnicate", "args": []}, 3)
    assert "op 3" in check({"fn": "frobnicate", "args": []}, 3)
    assert "wrong number of arguments (1)" in check({"fn": "where", "args": [0]})
    assert "missing attribute 'groups'" in check(
        {"fn": "conv", "args": [0, 1], "ints": {"stride": [1], "padding": [0], "dilation": [1]}})
    assert check({"fn": "cat", "args": [0, 1, 2, 3], "ints": {"dim": [0]}}) == ""


def test_the_engine_builds_only_what_the_table_knows():
    b = ProgramBuilder()
    x = b.input((4,), "float32")
    good = b.op("exp", [x])
    assert b.build([good])["ops"][0]["fn"] == "exp"
    bad = b.op("expp", [x])
    with pytest.raises(ValueError, match="outside the vocabulary: op 0 \\('expp'\\)"):
        b.build([bad])
    # A reduction drawn without its dims (attributes go through `op` as-is).
    with pytest.raises(ValueError, match="missing attribute 'dims'"):
        b.build([b.op("sum", [x], ints={"dim": [0]})])
