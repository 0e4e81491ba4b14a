"""Calls the kernels of a dice-lower manifest from Python.

dice-lower writes `<artifacts>/manifest.json` (docs/runtime.md): one entry
per fingerprint naming the kernel library, its dispatcher op and its
signature. The C runtime (lib/Runtime, through ctypes) reads and checks it
and loads its libraries, as it does for lowered code; loading a library
registers `dice::k_<fingerprint>`, which is then called like any torch op,
so tensors stay where they are (no copies, any device the kernel supports).

    rt = Runtime("artifacts/manifest.json")
    (y,) = rt.call("3f9a0c1d2e4b5a69", x, w)
"""

import ctypes
import json
import os
from pathlib import Path

import torch

SOURCE_ROOT = Path(__file__).resolve().parents[2]

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


def _runtime_library():
    """libDiceRuntime.so, loaded once: the one reader of manifests (it checks
    them and loads their kernel libraries, registering their ops here)."""
    global _LIBRARY
    if _LIBRARY is None:
        build = Path(os.environ.get("DICE_BUILD_DIR", SOURCE_ROOT / "build"))
        path = build / "lib" / "Runtime" / "libDiceRuntime.so"
        if not path.is_file():
            raise DiceRuntimeError(f"no DICE runtime at {path}; build the project "
                                   "(scripts/setup.sh) or set DICE_BUILD_DIR")
        library = ctypes.CDLL(str(path))
        library.dice_runtime_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
        library.dice_runtime_describe.argtypes = [
            ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t),
            ctypes.c_char_p, ctypes.c_size_t]
        _LIBRARY = library
    return _LIBRARY


_LIBRARY = None


def _read_manifest(path):
    """The manifest at `path`, as the C runtime read and checked it."""
    library = _runtime_library()
    error = ctypes.create_string_buffer(4096)
    name = os.fsencode(path)
    if library.dice_runtime_open(name, error, len(error)) != 0:
        raise DiceRuntimeError(error.value.decode(errors="replace"))
    needed = ctypes.c_size_t(0)
    text = ctypes.create_string_buffer(1 << 16)
    while True:
        if library.dice_runtime_describe(name, text, len(text), ctypes.byref(needed),
                                         error, len(error)) != 0:
            raise DiceRuntimeError(error.value.decode(errors="replace"))
        if needed.value <= len(text):
            return json.loads(text.value.decode())
        text = ctypes.create_string_buffer(needed.value)


def call_operator(op, tensors):
    """A kernel's dispatcher op called on `tensors`. The verifier judged the
    kernel on contiguous inputs only, and a kernel may index its inputs as
    row-major without checking: a view (a transposed weight, a slice) is
    handed over as a contiguous copy."""
    return op(*[t.contiguous() for t in tensors])


class Kernel:
    """One kernel of a manifest: its dispatcher op and signature."""

    def __init__(self, fingerprint, entry):
        self.fingerprint = fingerprint
        self.operator = entry["operator"]
        self.inputs = [(t["shape"], DTYPES[t["dtype"]]) for t in entry["inputs"]]
        self.results = [(t["shape"], DTYPES[t["dtype"]]) for t in entry["results"]]

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
        outputs = call_operator(op, tensors)
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
        self.path = Path(manifest_path)
        manifest = _read_manifest(self.path)
        self.kernels = {fp: Kernel(fp, entry) for fp, entry in manifest["kernels"].items()}

    def call(self, fingerprint, *tensors):
        """The kernel's results, always a list."""
        kernel = self.kernels.get(fingerprint)
        if kernel is None:
            raise DiceRuntimeError(f"unknown kernel '{fingerprint}': {self.path} does not list it")
        return kernel(*tensors)


def load(manifest):
    """A Runtime from a path, or `manifest` itself when it is one already."""
    return manifest if isinstance(manifest, Runtime) else Runtime(manifest)
