"""The evaluation task set under tasks/: its shape, and that every task runs on CPU.

Each task is loaded the way `dice bench tasks` loads it (dice.programs.load_program) and run
eagerly twice under one seed: the results must be finite and bit-identical, the inputs
untouched, and one forward must stay within a size limit (matmul and convolution FLOPs,
elements held) so that CI can run them all on a small CPU.
"""

import ast
import re
from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from dice.programs import load_program

TASKS_ROOT = Path(__file__).resolve().parents[2] / "tasks"
TASKS = sorted(TASKS_ROOT.glob("level*/*.py"))
MINIMUM_PER_LEVEL = {"level1": 25, "level2": 22, "level3": 13}
MINIMUM_TOTAL = 60
# Size limits for CI on a small CPU: FLOPs of a forward's matmuls and convolutions
# (torch's FlopCounterMode) and elements of its inputs, parameters, buffers and outputs
# (1 GiB of float32). The largest task today has about 21 GFLOP and 218 M elements.
FLOP_LIMIT = 32 * 10**9
ELEMENT_LIMIT = 1 << 28
SEED = 1234
FILE_NAME = re.compile(r"^(\d\d)_[a-z0-9_]+\.py$")


def _task_id(path):
    return str(path.relative_to(TASKS_ROOT))


def _flatten(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in _flatten(item)]
    raise AssertionError(f"forward returned a {type(value).__name__}; expected tensors")


def _run(path, copy_inputs=True):
    """Load under SEED and run once; returns (inputs before, inputs after, outputs, FLOPs,
    elements held).

    Without copy_inputs, "inputs before" is None: a copy of large inputs costs as much as a
    forward, and only the first run checks them."""
    torch.manual_seed(SEED)
    program = load_program(path)
    before = None
    if copy_inputs:
        before = [x.clone() if isinstance(x, torch.Tensor) else x for x in program.inputs]
    with torch.no_grad(), FlopCounterMode(display=False) as flops:
        out = program.module(*program.inputs)
    outputs = _flatten(out)
    held = [x for x in program.inputs if isinstance(x, torch.Tensor)] + outputs + \
        list(program.module.parameters()) + list(program.module.buffers())
    return before, list(program.inputs), outputs, flops.get_total_flops(), \
        sum(t.numel() for t in held)


def _model_source(path):
    text = path.read_text()
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            return ast.get_source_segment(text, node)
    raise AssertionError(f"{path}: no top-level class Model")


def test_task_set_size():
    counts = {level: 0 for level in MINIMUM_PER_LEVEL}
    for path in TASKS:
        counts[path.parent.name] = counts.get(path.parent.name, 0) + 1
    assert set(counts) == set(MINIMUM_PER_LEVEL), f"unexpected level folders: {sorted(counts)}"
    for level, minimum in MINIMUM_PER_LEVEL.items():
        assert counts[level] >= minimum, f"{level} has {counts[level]} tasks, needs {minimum}"
    assert len(TASKS) >= MINIMUM_TOTAL, f"{len(TASKS)} tasks, needs {MINIMUM_TOTAL}"


def test_task_file_names_are_numbered_per_level():
    for level in MINIMUM_PER_LEVEL:
        names = [p.name for p in TASKS if p.parent.name == level]
        bad = [n for n in names if not FILE_NAME.match(n)]
        assert not bad, f"{level}: names not of the form NN_short_name.py: {bad}"
        numbers = sorted(int(n[:2]) for n in names)
        assert numbers == list(range(1, len(names) + 1)), \
            f"{level}: numbers are not 01..{len(names):02d} without gaps or repeats: {numbers}"


def test_no_two_tasks_share_a_model():
    seen = {}
    for path in TASKS:
        source = " ".join(_model_source(path).split())
        assert source not in seen, f"{_task_id(path)} has the same Model as {seen[source]}"
        seen[source] = _task_id(path)


def test_every_task_file_starts_with_a_one_line_docstring():
    for path in TASKS:
        docstring = ast.get_docstring(ast.parse(path.read_text()), clean=False)
        assert docstring, f"{_task_id(path)}: no module docstring"
        assert "\n" not in docstring.strip(), f"{_task_id(path)}: docstring is not one line"


@pytest.mark.parametrize("path", TASKS, ids=_task_id)
def test_task_runs_deterministically_on_cpu(path):
    before, after, first, flops, elements = _run(path)

    for x in before:
        assert isinstance(x, (torch.Tensor, int, float, bool)), \
            f"get_inputs() holds a {type(x).__name__}; only tensors and Python scalars are allowed"
        if isinstance(x, torch.Tensor):
            assert x.device.type == "cpu", f"get_inputs() holds a tensor on {x.device}"
    for i, (x, y) in enumerate(zip(before, after)):
        if isinstance(x, torch.Tensor):
            assert torch.equal(x, y), f"forward changed input {i} in place"

    assert flops <= FLOP_LIMIT and elements <= ELEMENT_LIMIT, (
        f"one forward has {flops / 1e9:.1f} GFLOP and holds {elements / 1e6:.0f} M elements "
        f"(limits {FLOP_LIMIT / 1e9:.0f} and {ELEMENT_LIMIT / 1e6:.0f}): make the task's "
        "sizes smaller")
    for i, t in enumerate(first):
        if t.is_floating_point():
            assert torch.isfinite(t).all(), f"output {i} has non-finite values"

    _, _, second, _, _ = _run(path, copy_inputs=False)
    assert len(first) == len(second)
    for i, (a, b) in enumerate(zip(first, second)):
        assert a.dtype == b.dtype and a.shape == b.shape, f"output {i} changed shape or dtype"
        assert torch.equal(a, b), f"output {i} differs between two runs under the same seed"


def test_readme_lists_every_task():
    readme = (TASKS_ROOT / "README.md").read_text()
    listed = set(re.findall(r"\((level\d/\d\d_[a-z0-9_]+\.py)\)", readme))
    present = {_task_id(p) for p in TASKS}
    assert not present - listed, f"tasks/README.md does not list {sorted(present - listed)}"
    assert not listed - present, f"tasks/README.md lists missing files {sorted(listed - present)}"
