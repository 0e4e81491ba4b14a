"""The front end keeps each model's meaning at every granularity.

For each of the project's models (test/torch_models/faithfulness_models.py):
export with torch-mlir, outline and scaffold with dice-opt at op, fusion and
function granularity, turn the function into a plan (dice-plan), then run
the plan on fresh random inputs twice, through the printed Python reference
programs and through the C++ ATen executor, and compare both with the
original model. A model that yields no kernel request at some granularity
fails: then the test would check nothing.
"""

import json
import sys
from collections import Counter

import pytest
import torch

from build_tree import SOURCE_ROOT, tool
from plan_checks import fresh_inputs, relative_error, run_aten

sys.path.insert(0, str(SOURCE_ROOT / "test" / "torch_models"))

import faithfulness_models as models  # noqa: E402
from dice.plan import run_plan  # noqa: E402
from dice.torch_mlir_import import export_linalg_on_tensors  # noqa: E402

GRANULARITIES = ("op", "fusion", "function")
MAX_RELATIVE_ERROR = 1e-5
REQUESTS_PER_LEVEL = Counter()






@pytest.fixture(scope="module", params=sorted(models.MODELS))
def exported(request, tmp_path_factory):
    name = request.param
    module, example = models.build(name)
    mlir = export_linalg_on_tensors(module, example, func_name=name)
    path = tmp_path_factory.mktemp(name) / f"{name}.mlir"
    path.write_text(mlir)
    return name, module, example, path


@pytest.mark.parametrize("granularity", GRANULARITIES)
def test_reference_programs_compute_the_model(exported, granularity, tmp_path):
    name, module, example, source = exported
    outlined = tool("dice-opt", source, f"--dice-outline=granularity={granularity}",
                    "--dice-scaffold")
    plan_text = tool("dice-plan", stdin=outlined)
    plan = json.loads(plan_text)
    requests = [s for s in plan["steps"] if "request" in s]
    assert requests, f"{name} at granularity={granularity} produced no kernel request"
    for step in requests:
        REQUESTS_PER_LEVEL[step["level"]] += 1
    if granularity == "function":
        assert len(requests) == 1 and requests[0]["level"] == 3

    plan_path = tmp_path / "plan.json"
    plan_path.write_text(plan_text)
    for trial in range(2):
        inputs = fresh_inputs(example, seed=1000 * trial + 7)
        with torch.no_grad():
            expected = module(*inputs)
        expected = list(expected) if isinstance(expected, tuple) else [expected]

        python_outputs = run_plan(plan, inputs)
        aten_outputs = run_aten(plan_path, inputs, tmp_path)
        for backend, outputs in (("python", python_outputs), ("aten", aten_outputs)):
            assert len(outputs) == len(expected)
            for got, want in zip(outputs, expected):
                assert got.shape == want.shape and got.dtype == want.dtype, backend
                err = relative_error(got, want)
                assert err <= MAX_RELATIVE_ERROR, (
                    f"{name} ({granularity}, {backend}): max relative error {err:.3g}")




def test_every_level_is_covered():
    """Runs last (pytest keeps file order): the levels the models reached."""
    print(f"\nkernel requests per level: {dict(sorted(REQUESTS_PER_LEVEL.items()))}")
    assert all(REQUESTS_PER_LEVEL[level] > 0 for level in (1, 2, 3))
    assert len(models.SINGLE_OPS) >= 15 and len(models.FUSIONS) >= 10 and len(models.BLOCKS) >= 5
