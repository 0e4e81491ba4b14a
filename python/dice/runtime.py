"""Calls the kernels of a dice-lower manifest from Python.

dice-lower writes `<artifacts>/manifest.json` (docs/runtime.md): one entry
per fingerprint naming the kernel library, its dispatcher op and its
signature. Loading a library registers `dice::k_<fingerprint>`, which is
then called like any torch op, so tensors stay where they are (no copies,
any device the kernel supports).

    rt = Runtime("artifacts/manifest.json")
    (y,) = rt.call("3f9a0c1d2e4b5a69", x, w)
"""

import json
from pathlib import Path

import torch

MANIFEST_VERSION = 1

DTYPES = {
    "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "float64": torch.float64, "int64": torch.int64, "int32": torch.int32,
    "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool,
}


class DiceRuntimeError(RuntimeError):
    """A manifest that cannot be used, or a call that does not fit it."""


def _operator(name):
    """The op packet of `ns::name`, or None when it is not registered."""
    namespace, _, op = name.partition("::")
    if not op:
        raise DiceRuntimeError(f"operator '{name}' is not of the form namespace::name")
    try:
        return getattr(getattr(torch.ops, namespace), op)
    except (AttributeError, RuntimeError):
        return None


def _signature(entry, key, where):
    try:
        return [(list(t["shape"]), DTYPES[t["dtype"]]) for t in entry[key]]
    except (KeyError, TypeError) as e:
        raise DiceRuntimeError(f"{where}: bad '{key}': {e!r}") from None


class Kernel:
    def __init__(self, fingerprint, entry, manifest_dir, where):
        self.fingerprint = fingerprint
        try:
            self.operator = entry["operator"]
        except (KeyError, TypeError):
            raise DiceRuntimeError(f"{where}: no 'operator'") from None
        self.inputs = _signature(entry, "inputs", where)
        self.results = _signature(entry, "results", where)
        library = entry.get("library")
        # An op registered already (its library loaded from another path, or
        # defined in this process) is not loaded again: registering a name
        # twice is an error.
        if library is not None and _operator(self.operator) is None:
            path = Path(manifest_dir) / library
            if not path.is_file():
                raise DiceRuntimeError(f"{where}: library '{path}' does not exist")
            try:
                torch.ops.load_library(str(path))
            except OSError as e:
                raise DiceRuntimeError(f"{where}: cannot load '{path}': {e}") from None
            if _operator(self.operator) is None:
                raise DiceRuntimeError(f"{where}: library '{path}' does not register "
                                    f"{self.operator}")

    def __call__(self, *tensors):
        where = f"kernel '{self.fingerprint}'"
        if len(tensors) != len(self.inputs):
            raise DiceRuntimeError(f"{where} takes {len(self.inputs)} inputs, got {len(tensors)}")
        for i, (tensor, (shape, dtype)) in enumerate(zip(tensors, self.inputs)):
            _check(f"{where}: input {i}", tensor, shape, dtype)
        op = _operator(self.operator)
        if op is None:
            raise DiceRuntimeError(f"{where}: operator {self.operator} is not registered "
                                "(the manifest names no library that registers it)")
        outputs = op(*tensors)
        if isinstance(outputs, torch.Tensor):
            outputs = [outputs]
        outputs = list(outputs)
        if len(outputs) != len(self.results):
            raise DiceRuntimeError(f"{where} returned {len(outputs)} tensors, "
                                f"the manifest says {len(self.results)}")
        for i, (tensor, (shape, dtype)) in enumerate(zip(outputs, self.results)):
            _check(f"{where}: result {i}", tensor, shape, dtype)
        return outputs


def _check(where, tensor, shape, dtype):
    if tensor.dtype != dtype:
        raise DiceRuntimeError(f"{where} is {tensor.dtype}, the kernel's is {dtype}")
    if len(tensor.shape) != len(shape) or any(
            want >= 0 and got != want for got, want in zip(tensor.shape, shape)):
        raise DiceRuntimeError(f"{where} has shape {list(tensor.shape)}, the kernel's is {shape}")


class Runtime:
    """The kernels of one manifest, their libraries loaded."""

    def __init__(self, manifest_path):
        path = Path(manifest_path)
        try:
            manifest = json.loads(path.read_text())
        except OSError as e:
            raise DiceRuntimeError(f"cannot read manifest '{path}': {e.strerror}") from None
        except json.JSONDecodeError as e:
            raise DiceRuntimeError(f"{path}:{e.lineno}:{e.colno}: malformed manifest: {e.msg}") from None
        if not isinstance(manifest, dict) or manifest.get("version") != MANIFEST_VERSION:
            raise DiceRuntimeError(f"{path}: not a version {MANIFEST_VERSION} DICE manifest")
        if not isinstance(manifest.get("kernels"), dict):
            raise DiceRuntimeError(f"{path}: the manifest has no 'kernels' object")
        self.path = path
        self.kernels = {
            fp: Kernel(fp, entry, path.parent, f"{path}: kernel '{fp}'")
            for fp, entry in manifest["kernels"].items()}

    def call(self, fingerprint, *tensors):
        """The kernel's results, always a list."""
        kernel = self.kernels.get(fingerprint)
        if kernel is None:
            raise DiceRuntimeError(f"unknown kernel '{fingerprint}': {self.path} does not list it")
        return kernel(*tensors)


def load(manifest):
    """A Runtime from a path, or `manifest` itself when it is one already."""
    return manifest if isinstance(manifest, Runtime) else Runtime(manifest)
