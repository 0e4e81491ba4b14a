"""Functions with Python-number arguments, as torch-mlir exports them.

torch.export keeps an int argument marked dynamic (`Dim.DYNAMIC`) as an
`i64` argument of the function, read inside payloads and by scalar
arithmetic outside them; a float argument is specialised to its example
value, but stays in the signature. Each program is outlined at op, fusion
and function granularity: every compute op must be inside a request (the
number is a kernel argument, a 0-d tensor), the plan must run through both
backends and equal eager PyTorch for numbers other than the example, and
with no kernel to use, the pipeline must give back the function unchanged.
"""

import json

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from build_tree import SOURCE_ROOT, tool
from plan_checks import run_aten

from dice.plan import run_plan
from dice.torch_mlir_import import export_linalg_on_tensors

GRANULARITIES = ("op", "fusion", "function")
EMPTY_REPLAY = SOURCE_ROOT / "test" / "Passes" / "Inputs" / "empty-replay.jsonl"


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x, number):
        return self.fn(x, number)


def floats(*shape):
    return lambda g: torch.randn(shape, generator=g)


def ints(*shape):
    return lambda g: torch.randint(-20, 20, shape, generator=g)


# name: (function of (tensor, number), tensor draw, example number, other numbers)
CASES = {
    "int_times_and_plus": (lambda x, n: x * n + n, floats(4, 8), 3, (0, -5, 11)),
    "int_plus_one_after_leaky_relu": (lambda x, n: F.leaky_relu(x, 0.1) * (n + 1),
                                      floats(4, 8), 3, (-1, 7)),
    "int_division": (lambda x, n: x / n, floats(3, 5), 4, (-3, 9)),
    "int_tensor_arithmetic": (lambda a, n: (a * n - n) // 3, ints(3, 5), 4, (-3, 7)),
    "int_clamp": (lambda x, n: torch.clamp(x * 10, -n, n), floats(4, 6), 5, (1, 12)),
    "int_in_softmax": (lambda x, n: torch.softmax(x * n, dim=-1), floats(3, 7), 2, (-1, 5)),
    "int_squared": (lambda x, n: x + n * n - 2 * n, floats(4, 4), 3, (-4, 10)),
    "float_specialised": (lambda x, a: x * a + 1, floats(4, 8), 0.5, (0.5,)),
}


def export(name, tmp_path):
    fn, draw, example, _ = CASES[name]
    module = Fn(fn)
    x = draw(torch.Generator().manual_seed(1))
    dynamic = ({}, torch.export.Dim.DYNAMIC) if isinstance(example, int) else None
    mlir = export_linalg_on_tensors(module, (x, example), func_name=name,
                                    dynamic_shapes=dynamic)
    path = tmp_path / f"{name}.mlir"
    path.write_text(mlir)
    return module, draw, path


def number_tensor(value):
    return torch.tensor(value, dtype=torch.int64 if isinstance(value, int) else torch.float64)


@pytest.mark.parametrize("name", sorted(CASES))
def test_scalar_argument_is_a_kernel_argument(name, tmp_path):
    module, draw, source = export(name, tmp_path)
    text = source.read_text()
    example = CASES[name][2]
    if isinstance(example, int):
        assert ", %arg1: i64)" in text, "the export no longer keeps the int argument"
    # Every compute op is inside a request at fusion granularity.
    plan = json.loads(tool("dice-plan", stdin=tool(
        "dice-opt", source, "--dice-outline=granularity=fusion", "--dice-scaffold")))
    programs = [s for s in plan["steps"] if s["kind"] == "program"]
    assert programs and all("request" in s for s in programs), \
        [s["python"] for s in programs if "request" not in s]
    if isinstance(example, int):
        scalar_inputs = [i for s in programs for i in s["program"]["inputs"]
                         if i["shape"] == [] and i["dtype"] == "int64"]
        assert scalar_inputs, "no request takes the number"


@pytest.mark.parametrize("granularity", GRANULARITIES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_plan_computes_the_function_for_other_numbers(name, granularity, tmp_path):
    module, draw, source = export(name, tmp_path)
    plan_text = tool("dice-plan", stdin=tool(
        "dice-opt", source, f"--dice-outline=granularity={granularity}", "--dice-scaffold"))
    plan = json.loads(plan_text)
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(plan_text)
    for seed, number in enumerate(CASES[name][3]):
        x = draw(torch.Generator().manual_seed(10 + seed))
        want = module(x, number)
        inputs = [x, number_tensor(number)]
        for backend, outputs in (("python", run_plan(plan, inputs)),
                                 ("aten", run_aten(plan_path, inputs, tmp_path))):
            (got,) = outputs
            where = f"{name} ({granularity}, {backend}, number {number})"
            assert got.dtype == want.dtype, where
            assert got.shape == want.shape, where
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6, msg=where)


@pytest.mark.parametrize("granularity", GRANULARITIES)
@pytest.mark.parametrize("name", ["int_plus_one_after_leaky_relu", "int_squared"])
def test_falling_back_gives_the_function_back(name, granularity, tmp_path):
    _, _, source = export(name, tmp_path)
    plain = tool("dice-opt", source)
    piped = tool("dice-opt", source, f"--dice-db={tmp_path / 'kernels.db'}",
                 f"--dice-pipeline=engine=replay:{EMPTY_REPLAY} granularity={granularity}")
    assert piped == plain


def test_example_shapes_are_recorded_beside_a_number():
    """A dynamic batch next to a number keeps its example size (the number
    is an argument of the function too, in its place)."""
    module = Fn(lambda x, n: x * n)
    batch = torch.export.Dim("batch", min=1, max=64)
    text = export_linalg_on_tensors(module, (torch.randn(5, 8), 3), func_name="f",
                                    dynamic_shapes=({0: batch}, torch.export.Dim.DYNAMIC))
    assert "%arg0: tensor<?x8xf32> {dice.example_shape = array<i64: 5, 8>}, %arg1: i64" in text
