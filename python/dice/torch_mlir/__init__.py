"""torch-mlir meets dice: a linalg-on-tensors backend hook.

    import dice.torch_mlir
    run = dice.torch_mlir.compile(model, [torch.randn(8, 32)], engine="replay:kernels.jsonl")
    y = run(x)                      # torch tensors in, torch tensors out

or, the torch-mlir way, with a module torch-mlir exported:

    backend = dice.torch_mlir.DiceLinalgOnTensorsBackend(engine=...)
    invoker = backend.load(backend.compile(linalg_module))
    y = invoker.forward(x_numpy)    # numpy arrays in and out

dice's pipeline replaces what it can with verified kernels; the inner
backend (by default `CpuLinalgBackend`: upstream MLIR passes and MLIR's
execution engine) compiles and runs the rest. See docs/pytorch.md.
"""

import numpy as np
import torch

from dice.errors import DiceError
from dice.torch_mlir.backend import DiceArtifact, DiceLinalgOnTensorsBackend
from dice.torch_mlir.cpu_backend import CPU_PIPELINE, CpuLinalgBackend
from dice.torch_mlir.errors import InvocationError, KernelLinkError, ModuleError

__all__ = ["compile", "CompiledModel", "DiceArtifact", "DiceLinalgOnTensorsBackend",
           "CpuLinalgBackend", "CPU_PIPELINE", "InvocationError", "KernelLinkError",
           "ModuleError"]


class CompiledModel:
    """A model compiled by `compile`: call it like the model (tensors in,
    a tensor or a tuple of tensors out, on the CPU). `artifact` has the
    lowered module, dice's report and the kernels used."""

    def __init__(self, invoker, artifact):
        self.invoker = invoker
        self.artifact = artifact

    def __call__(self, *tensors):
        arrays = []
        for i, t in enumerate(tensors):
            if not isinstance(t, torch.Tensor):
                raise InvocationError(f"argument {i} is a {type(t).__name__}, not a tensor")
            arrays.append(t.detach().cpu().numpy())
        out = self.invoker.forward(*arrays)
        if isinstance(out, tuple):
            return tuple(torch.from_numpy(np.asarray(a)) for a in out)
        return torch.from_numpy(np.asarray(out))


def compile(model, example_inputs, output_type="linalg-on-tensors", granularity="fusion",
            engine="model", config=None, inner=None, jobs=2, **export_options):
    """Exports `model(*example_inputs)` with torch-mlir, runs it through
    `DiceLinalgOnTensorsBackend` and returns a `CompiledModel`. The shapes
    and dtypes are those of the example inputs; `export_options` go to
    `torch_mlir.fx.export_and_import`."""
    from dice.torch_mlir_import import export_linalg_on_tensors

    if output_type != "linalg-on-tensors":
        raise DiceError(f"output_type '{output_type}': the dice backend takes "
                        "linalg-on-tensors only")
    inputs = list(example_inputs) if isinstance(example_inputs, (list, tuple)) \
        else [example_inputs]
    for i, t in enumerate(inputs):
        if not isinstance(t, torch.Tensor):
            raise DiceError(f"example input {i} is a {type(t).__name__}, not a tensor")
    if isinstance(model, torch.nn.Module):
        model = model.eval()
    mlir = export_linalg_on_tensors(model, inputs, func_name="forward", **export_options)
    backend = DiceLinalgOnTensorsBackend(inner=inner, granularity=granularity, engine=engine,
                                         config=config, jobs=jobs)
    artifact = backend.compile(mlir)
    return CompiledModel(backend.load(artifact), artifact)
