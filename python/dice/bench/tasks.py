"""The tasks of a folder: every KernelBench-format file under it (the
project's `tasks/`, or KernelBench's `KernelBench/` with its `level1/` ...
subfolders), and the inputs of each correctness trial."""

import re
from dataclasses import dataclass
from pathlib import Path

import torch

from dice.errors import DiceError
from dice.programs import load_program

# Read as text, not imported: a checkout also holds scripts that do work
# when imported, and only files defining both are tasks.
_TASK_MARKERS = (re.compile(r"^class Model\b", re.M), re.compile(r"^def get_inputs\b", re.M))


@dataclass
class Task:
    name: str    # the path under the folder, without `.py`: "level1/19_ReLU"
    path: Path


def _natural_key(path):
    # "level1/2_x" before "level1/10_x", as KernelBench numbers its problems.
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(path))]


def find_tasks(folder, name_filter=None, limit=None):
    """The tasks under `folder` in natural order; `name_filter` keeps those
    whose name holds it, `limit` the first that many after filtering."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DiceError(f"{folder}: no such folder")
    found = []
    for path in sorted(folder.rglob("*.py"), key=lambda p: _natural_key(p.relative_to(folder))):
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        if not all(marker.search(text) for marker in _TASK_MARKERS):
            continue
        name = path.relative_to(folder).with_suffix("").as_posix()
        if name_filter is None or name_filter in name:
            found.append(Task(name, path))
    if limit is not None:
        found = found[:limit]
    if not found:
        what = f" matching '{name_filter}'" if name_filter else ""
        raise DiceError(f"{folder}: no KernelBench-format tasks{what} (files defining "
                        "class Model and get_inputs())")
    return found


def to_device(values, device):
    return tuple(v.to(device) if isinstance(v, torch.Tensor) else v for v in values)


def load_task(task, device):
    """(module on `device`, inputs(seed)): the task's Model built as
    KernelBench builds it (seed 42), and a function giving its forward's
    inputs for one trial, drawn by get_inputs() under that seed."""
    torch.manual_seed(42)
    program = load_program(task.path)
    # load_program keeps the file's namespace only as the globals of the
    # Model's methods; get_inputs lives there, next to the constants it uses.
    get_inputs = type(program.module).forward.__globals__.get("get_inputs")
    if not callable(get_inputs):
        raise DiceError(f"{task.path}: Model.forward is not defined in the file beside "
                        "get_inputs()")

    def inputs(seed):
        torch.manual_seed(seed)
        made = get_inputs()
        return to_device((made,) if isinstance(made, torch.Tensor) else made, device)

    return program.module.to(device), inputs
