"""The fusion policy on programs exported from PyTorch.

For each program of test/torch_models/fusion_models.py: export with
torch-mlir, outline at `fusion` granularity and scaffold (dice-opt must
succeed: no request cycle), count the requests against the count
docs/passes.md's policy gives, then turn the function into a plan
(dice-plan) and run it on fresh inputs through the Python reference
programs and the ATen executor: both must compute what eager PyTorch does.
"""

import json
import sys

import pytest
import torch

from build_tree import SOURCE_ROOT, tool
from plan_checks import fresh_inputs, relative_error, run_aten

sys.path.insert(0, str(SOURCE_ROOT / "test" / "torch_models"))

import fusion_models as programs  # noqa: E402
from dice.plan import run_plan  # noqa: E402
from dice.torch_mlir_import import export_linalg_on_tensors  # noqa: E402

MAX_RELATIVE_ERROR = 1e-5








def outline(name, tmp_path):
    """(module, example inputs, dice-opt's output at fusion granularity)."""
    module, example = programs.build(name)
    source = tmp_path / f"{name}.mlir"
    source.write_text(export_linalg_on_tensors(module, example, func_name=name))
    outlined = tool("dice-opt", source, "--dice-outline=granularity=fusion", "--dice-scaffold")
    return module, example, outlined


def plan_param(name):
    if name not in programs.UNPLANNABLE:
        return name
    return pytest.param(name, marks=pytest.mark.xfail(
        strict=True, reason=programs.UNPLANNABLE[name]))


@pytest.mark.parametrize("name", list(programs.PROGRAMS))
def test_fusion_request_count(name, tmp_path):
    _, _, outlined = outline(name, tmp_path)
    found = outlined.count("dice.kernel_request")
    assert found == programs.expected_requests(name), outlined


@pytest.mark.parametrize("name", [plan_param(n) for n in programs.PROGRAMS])
def test_fusion_plan_computes_the_program(name, tmp_path):
    module, example, outlined = outline(name, tmp_path)
    plan_text = tool("dice-plan", stdin=outlined)
    plan = json.loads(plan_text)
    assert sum("request" in step for step in plan["steps"]) == programs.expected_requests(name)

    plan_path = tmp_path / "plan.json"
    plan_path.write_text(plan_text)
    for trial in range(2):
        inputs = fresh_inputs(example, seed=1000 * trial + 11)
        with torch.no_grad():
            expected = module(*inputs)
        for backend, outputs in (("python", run_plan(plan, inputs)),
                                 ("aten", run_aten(plan_path, inputs, tmp_path))):
            assert len(outputs) == 1
            got = outputs[0]
            assert got.shape == expected.shape and got.dtype == expected.dtype, backend
            err = relative_error(got, expected)
            assert err <= MAX_RELATIVE_ERROR, f"{name} ({backend}): max relative error {err:.3g}"
