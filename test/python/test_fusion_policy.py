"""The fusion policy on programs exported from PyTorch.

For each program of test/torch_models/fusion_models.py: export with
torch-mlir, outline at `fusion` granularity and scaffold (dice-opt must
succeed: no request cycle), count the requests of the plan (dice-plan)
against the count docs/passes.md's policy gives, and run the plan on fresh
inputs through the Python reference programs and the ATen executor: both
must compute what eager PyTorch does.
"""

import json
import sys

import pytest
import torch

from build_tree import SOURCE_ROOT, tool

sys.path.insert(0, str(SOURCE_ROOT / "test" / "torch_models"))

import fusion_models as programs  # noqa: E402
from dice.plan import run_plan  # noqa: E402
from dice.torch_mlir_import import export_linalg_on_tensors  # noqa: E402

MAX_RELATIVE_ERROR = 1e-5


def relative_error(actual, expected):
    scale = expected.abs().max().item() or 1.0
    return (actual.double() - expected.double()).abs().max().item() / scale


def fresh_inputs(example, seed):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(x.shape, generator=generator, dtype=x.dtype) for x in example]


def run_aten(plan_path, inputs, tmp_path):
    inputs_path, outputs_path = tmp_path / "inputs.pt", tmp_path / "outputs.pt"
    torch.save(list(inputs), inputs_path)
    tool("dice-reference-run", "--plan", plan_path, "--inputs", inputs_path,
         "--outputs", outputs_path)
    return torch.load(outputs_path)


@pytest.mark.parametrize("name", list(programs.PROGRAMS))
def test_fusion_requests_compute_the_program(name, tmp_path):
    module, example = programs.build(name)
    source = tmp_path / f"{name}.mlir"
    source.write_text(export_linalg_on_tensors(module, example, func_name=name))
    outlined = tool("dice-opt", source, "--dice-outline=granularity=fusion", "--dice-scaffold")
    plan_text = tool("dice-plan", stdin=outlined)
    plan = json.loads(plan_text)

    requests = [step for step in plan["steps"] if "request" in step]
    assert len(requests) == programs.expected_requests(name), (
        f"{name}: {[step['python'].count('torch.') for step in requests]}")

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
