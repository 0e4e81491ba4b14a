"""A user's PyTorch program, as `dice compile` and `dice bench` take it.

Two spellings:

- `FILE.py`, in KernelBench's format: the file defines `Model` (an
  `nn.Module`), `get_init_inputs()` (the constructor's arguments) and
  `get_inputs()` (the forward's example inputs);
- `MODULE:FACTORY` or `FILE.py:FACTORY`: `FACTORY()` returns a module and
  its example inputs as a pair, or a module alone when the file or module
  also defines `get_inputs()`.
"""

import importlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path

import torch

from dice.errors import ProgramError


@dataclass
class Program:
    name: str            # for messages and the exported function's name
    module: torch.nn.Module
    inputs: tuple        # example inputs: tensors (and Python scalars)


def _load_file(path):
    path = Path(path)
    if not path.is_file():
        raise ProgramError(f"{path}: no such file")
    name = "dice_program_" + "".join(c if c.isalnum() else "_" for c in path.stem)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # the user's code: any failure is theirs to see
        raise ProgramError(f"{path}: importing it raised {type(e).__name__}: {e}") from e
    return module


def _call(where, fn, *args):
    try:
        return fn(*args)
    except Exception as e:
        raise ProgramError(f"{where} raised {type(e).__name__}: {e}") from e


def _inputs(where, namespace):
    get_inputs = getattr(namespace, "get_inputs", None)
    if not callable(get_inputs):
        raise ProgramError(f"{where}: defines no get_inputs()")
    inputs = _call(f"{where}: get_inputs()", get_inputs)
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    return tuple(inputs)


def _checked(where, module, inputs):
    if not isinstance(module, torch.nn.Module):
        raise ProgramError(f"{where}: got a {type(module).__name__}, not a torch.nn.Module")
    if not any(isinstance(x, torch.Tensor) for x in inputs):
        raise ProgramError(f"{where}: the example inputs hold no tensor")
    return module.eval()


def load_program(spec):
    """The Program that `spec` (see the module's doc) names."""
    spec = str(spec)
    target, _, factory = spec.rpartition(":") if ":" in spec else (spec, "", "")
    if factory and not target:
        raise ProgramError(f"'{spec}': expected MODULE:FACTORY or FILE.py")
    if factory:
        if target.endswith(".py"):
            namespace = _load_file(target)
            name = Path(target).stem
        else:
            try:
                namespace = importlib.import_module(target)
            except Exception as e:
                raise ProgramError(f"cannot import '{target}': {type(e).__name__}: {e}") from e
            name = target.rsplit(".", 1)[-1]
        fn = getattr(namespace, factory, None)
        if not callable(fn):
            raise ProgramError(f"{target}: defines no callable '{factory}'")
        made = _call(f"{spec}()", fn)
        if isinstance(made, tuple) and len(made) == 2 and isinstance(made[0], torch.nn.Module):
            module, inputs = made
            inputs = (inputs,) if isinstance(inputs, torch.Tensor) else tuple(inputs)
        else:
            module, inputs = made, _inputs(target, namespace)
        return Program(name, _checked(spec, module, inputs), inputs)

    namespace = _load_file(target)
    model_class = getattr(namespace, "Model", None)
    if not isinstance(model_class, type) or not issubclass(model_class, torch.nn.Module):
        raise ProgramError(f"{target}: defines no Model (an nn.Module subclass); "
                           "a KernelBench-format file defines Model, get_inputs() "
                           "and get_init_inputs(), or name a factory as FILE.py:FACTORY")
    get_init = getattr(namespace, "get_init_inputs", None)
    init = _call(f"{target}: get_init_inputs()", get_init) if callable(get_init) else []
    module = _call(f"{target}: Model(*get_init_inputs())", model_class, *init)
    inputs = _inputs(target, namespace)
    return Program(Path(target).stem, _checked(target, module, inputs), inputs)


def python_identifier(name):
    """`name` made a valid MLIR/Python function name."""
    cleaned = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return cleaned if cleaned and not cleaned[0].isdigit() else "f_" + cleaned


__all__ = ["Program", "load_program", "python_identifier"]
