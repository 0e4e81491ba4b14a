"""Constants in printed reference programs are spelled as Python's repr
spells them (the oracle): `20.0`, not `2e+01`; `1536.0`, not `1.536e+03`.
What a prompt shows is what a user would have written, and a number a model
has to relate to the shapes beside it reads as those do."""

import json
import random
import re

from build_tree import tool


def program_of(value):
    """x0 * value, in float64 so every double is a value of its dtype."""
    f64 = {"dtype": "float64", "shape": [4]}
    return {"inputs": [f64],
            "ops": [{"args": [], "fn": "scalar", "type": {"dtype": "float64", "shape": []},
                     "value": value},
                    {"args": [0, 1], "fn": "mul", "type": f64}],
            "outputs": [2]}


def test_constants_are_spelled_as_python_repr():
    rng = random.Random(0)
    values = [20.0, 1536.0, 0.1, 1e-05, 0.0001, 1e16, 1.5e16, 123456789012345.0,
              9999999999999998.0, 2.0 ** -12, -0.0, -2.5, 5e-324, 1.7976931348623157e308]
    values += [rng.uniform(-1, 1) * 10.0 ** rng.randint(-12, 20) for _ in range(300)]
    lines = "".join(json.dumps({"program": program_of(v)}) + "\n" for v in values)
    rows = [json.loads(line) for line in tool("dice-scaffold-programs", stdin=lines).splitlines()]
    assert len(rows) == len(values)
    for value, row in zip(values, rows):
        match = re.search(r"torch\.mul\(x0, (\S+)\)", row["reference"])
        assert match, row["reference"]
        assert match.group(1) == repr(value), value
