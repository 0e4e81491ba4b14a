"""Every task of tasks/ through `torch.compile(backend="dice")` on the CPU
gives eager PyTorch's outputs.

No candidate is asked for here (engine 'none'), so every graph runs
on the fallback; what this checks is that the backend's whole path (export,
outline, scaffold, plan) runs on ordinary programs without ever changing a
result or raising, and that the fallback's reason is said, not hidden.
"""

from pathlib import Path

import pytest
import torch

import dice.backend
from build_tree import BUILD_DIR, SOURCE_ROOT
from dice.programs import load_program

TASKS = sorted((SOURCE_ROOT / "tasks").glob("level*/*.py"))


def test_the_task_set_is_there():
    assert len(TASKS) >= 60, f"only {len(TASKS)} tasks under tasks/"


@pytest.mark.parametrize("path", TASKS, ids=[f"{p.parent.name}/{p.stem}" for p in TASKS])
def test_task_through_torch_compile_matches_eager(path, monkeypatch):
    monkeypatch.setenv("DICE_BUILD_DIR", str(BUILD_DIR))
    program = load_program(path)
    torch._dynamo.reset()
    dice.backend.clear_reports()
    compiled = torch.compile(program.module, backend="dice",
                             options={"fallback": "eager", "engine": "none"})
    torch.manual_seed(0)
    with torch.no_grad():
        expected = program.module(*program.inputs)
        got = compiled(*program.inputs)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    # Dynamo may capture no graph at all (it runs nn.LSTM as it is, for
    # example); whatever it captured went through the backend.
    for graph in dice.backend.reports():
        assert not graph.used_dice
        assert graph.fallback_reason, f"{graph.graph_id} fell back without a reason"
