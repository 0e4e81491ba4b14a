"""The engine drops programs whose result does not tell inputs apart
(dice.engine.degenerate): PyTorch runs each program, and the verdict
follows what PyTorch computes, not the grammar's bounds."""

import pytest

from dice.engine.degenerate import degenerate_result


def program(body, inputs, results="y"):
    lines = "\n".join("        " + line for line in body.splitlines())
    return f"""import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x0, x1):
{lines}
        return {results}


def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return []
"""


HALF = "torch.randn((64, 33), dtype=torch.float16), torch.randn((33,), dtype=torch.float16)"
FLOAT = "torch.randn((7, 5, 3), dtype=torch.float32), torch.randn((7, 5, 3), dtype=torch.float32)"


@pytest.mark.parametrize("body, inputs", [
    # x - tanh(x) of values near 2^-12 rounds to zero in float16
    ("t = torch.mul(x0, 0.000244140625)\ny = torch.sub(t, torch.tanh(t))", HALF),
    # a clamp the value always exceeds
    ("y = torch.clamp(torch.add(x0, x1) + 1000.0, -1.0, 1.0)", FLOAT),
    # a threshold never crossed: bools that are always false
    ("y = torch.gt(torch.abs(x0), 200.0)", FLOAT),
    # an argmax over a dimension of one element
    ("y = torch.argmax(x0[:, :1], dim=1)", HALF),
    # exp of a square that underflows: ones
    ("y = torch.exp(-torch.square(x0 * 1e-6))", FLOAT),
])
def test_a_result_that_does_not_move_is_degenerate(body, inputs):
    assert degenerate_result(program(body, inputs)) == 0


@pytest.mark.parametrize("body, inputs", [
    ("y = torch.mul(x0, x1)", FLOAT),
    ("y = torch.sub(x0, torch.tanh(x0))", HALF),   # the same function, at values of 1
    ("y = torch.gt(x0, 0.0)", FLOAT),
    ("y = torch.argmax(x0, dim=1)", HALF),
    ("y = torch.sum(x0 * 1e-3, dim=0)", HALF),
])
def test_a_result_that_moves_is_kept(body, inputs):
    assert degenerate_result(program(body, inputs)) is None


def test_the_first_degenerate_result_is_named():
    code = program("y = torch.mul(x0, 2.0)\nz = torch.clamp(x0 + 50.0, max=1.0)", FLOAT,
                   results="y, z")
    assert degenerate_result(code) == 1


# Two programs the engine drew before it had this check, which dice-verify
# called `incorrect` on an H100 (train/results/engine/engine-verify-h100-1bdf2ce.jsonl:
# "does not depend on the inputs") although their kernels computed them.
VERIFIER_FLAGGED = [
    ("""def forward(self, x0, x1, x2):
        t5 = x0.to(torch.float32)
        t6 = x1.to(torch.float32)
        t7 = torch.matmul(t5, t6)
        t8 = t7.to(torch.bfloat16)
        t9 = torch.mul(t8, 0.00390625)
        t10 = torch.abs(x2)
        t11 = torch.add(t10, 1.0)
        t12 = t11.reshape(1, 17, 1)
        t13 = torch.atan2(t9, t12)
        t14 = torch.tanh(t13)
        t15 = torch.sub(t13, t14)
        return t15""",
     "torch.randn((5, 17, 2), dtype=torch.bfloat16), "
     "torch.randn((5, 2, 16), dtype=torch.bfloat16), torch.randn((17, 1), dtype=torch.bfloat16)"),
    ("""def forward(self, x0, x1):
        t7 = torch.mul(x0, 0.03125)
        t8 = torch.abs(t7)
        t9 = torch.add(t8, 0.5)
        t10 = torch.mul(x1, 0.015625)
        t11 = t10.reshape(1, 32)
        t12 = torch.pow(t9, t11)
        t13 = t12.to(torch.float64)
        t14 = torch.sum(t13, dim=(1,))
        t15 = t14.reshape(13, 1)
        t16 = torch.div(t15, 32.0)
        t17 = torch.sub(t13, t16)
        t18 = torch.mul(t17, t17)
        t19 = torch.sum(t18, dim=(1,))
        t20 = torch.div(t19, 31.0)
        t21 = t20.to(torch.float16)
        t22 = torch.mul(t21, 0.5)
        t23 = torch.mul(t22, t22)
        t24 = torch.mul(t23, t22)
        return t24""",
     "torch.randn((13, 32), dtype=torch.float16), torch.randn((32,), dtype=torch.float16)"),
]


@pytest.mark.parametrize("forward, inputs", VERIFIER_FLAGGED)
def test_programs_the_verifier_flagged_are_degenerate(forward, inputs):
    code = ("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n\n    " + forward +
            f"\n\n\ndef get_inputs():\n    return [{inputs}]\n\n\n"
            "def get_init_inputs():\n    return []\n")
    assert degenerate_result(code) == 0
