"""Runs a plan written by dice-plan with the printed Python programs.

A plan is one function of a compiled module as weights and reference
programs in order (docs/reference-program.md). Running it with the Python
each step carries is what a KernelBench harness would run; the ATen executor
(`dice-reference-run --plan`) runs the same plan in C++. Kernel steps (calls
of accepted kernels) run through the kernel libraries of a dice-lower
manifest (`dice.runtime`).
"""

import torch

from dice import runtime as dice_runtime

DTYPES = {
    "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "float64": torch.float64, "int64": torch.int64, "int32": torch.int32,
    "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool,
}


def load_weight(step, device):
    dtype = DTYPES[step["type"]["dtype"]]
    data = bytearray.fromhex(step["data"])
    flat = torch.frombuffer(data, dtype=dtype) if data else torch.empty(0, dtype=dtype)
    return flat.reshape(step["type"]["shape"]).clone().to(device)


def python_model(source):
    """The `Model` instance of a printed reference program."""
    scope = {}
    exec(compile(source, "<reference program>", "exec"), scope)
    return scope["Model"]()


def run_plan(plan, inputs, manifest=None):
    """Returns the plan's outputs for `inputs` (a list of tensors).

    `manifest` (a path or a `dice.runtime.Runtime`) provides the kernels of
    kernel steps; a plan with kernel steps needs one.
    """
    if len(inputs) != len(plan["arguments"]):
        raise ValueError(f"the plan takes {len(plan['arguments'])} inputs, got {len(inputs)}")
    kernels = [s["fingerprint"] for s in plan["steps"] if s["kind"] == "kernel"]
    if kernels and manifest is None:
        raise ValueError(f"the plan calls kernel '{kernels[0]}'; run it with the "
                         "manifest dice-lower wrote (manifest=...)")
    runtime = dice_runtime.load(manifest) if kernels else None
    device = inputs[0].device if inputs else torch.device("cpu")
    values = dict(enumerate(inputs))
    models = {}
    for step in plan["steps"]:
        if step["kind"] == "weight":
            values[step["result"]] = load_weight(step, device)
            continue
        if step["kind"] == "kernel":
            outputs = runtime.call(step["fingerprint"], *[values[a] for a in step["args"]])
            for result, value in zip(step["results"], outputs):
                values[result] = value
            continue
        source = step["python"]
        if source not in models:
            models[source] = python_model(source)
        # The inputs' device is the default one: a step without tensor
        # arguments (a `torch.full` of a fill) creates its tensors there.
        with device:
            outputs = models[source](*[values[a] for a in step["args"]])
        if not isinstance(outputs, tuple):
            outputs = (outputs,)
        for result, value in zip(step["results"], outputs):
            values[result] = value
    return [values[o] for o in plan["outputs"]]
