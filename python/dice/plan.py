"""Runs a plan written by dice-plan with the printed Python programs.

A plan is one function of a compiled module as weights and reference
programs in order (docs/reference-program.md). Running it with the Python
each step carries is what a KernelBench harness would run; the ATen executor
(`dice-reference-run --plan`) runs the same plan in C++.
"""

import torch

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


def run_plan(plan, inputs):
    """Returns the plan's outputs for `inputs` (a list of tensors)."""
    if len(inputs) != len(plan["arguments"]):
        raise ValueError(f"the plan takes {len(plan['arguments'])} inputs, got {len(inputs)}")
    device = inputs[0].device if inputs else torch.device("cpu")
    values = dict(enumerate(inputs))
    models = {}
    for step in plan["steps"]:
        if step["kind"] == "weight":
            values[step["result"]] = load_weight(step, device)
            continue
        source = step["python"]
        if source not in models:
            models[source] = python_model(source)
        outputs = models[source](*[values[a] for a in step["args"]])
        if not isinstance(outputs, tuple):
            outputs = (outputs,)
        for result, value in zip(step["results"], outputs):
            values[result] = value
    return [values[o] for o in plan["outputs"]]
