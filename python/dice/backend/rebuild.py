"""A lowered function's plan as a callable graph: the accepted kernels as
`torch.ops.dice.k_<fingerprint>` calls, everything else as the plan's
reference programs, then compiled by the fallback.

dice-plan writes a lowered function as steps (docs/reference-program.md):
weights, calls of accepted kernels and reference programs. PlanRunner runs
them; for the Inductor fallback the runner is traced (make_fx, with fake
tensors) into one FX graph, so Inductor compiles and fuses the reference
programs between kernels and calls each kernel as an external op.
"""

import torch

from dice.backend.isolation import outside_dynamo
from dice.plan import load_weight, python_model
from dice.runtime import DiceRuntimeError, _operator, call_operator

_FAKES = set()  # kernel ops given a fake implementation in this process


class PlanRunner:
    """Runs one plan: weights loaded once, each reference program's Model
    made once, kernel steps as dispatcher calls."""

    def __init__(self, plan, runtime, device):
        self.plan = plan
        self.device = torch.device(device)
        self.weights = {s["result"]: load_weight(s, self.device)
                        for s in plan["steps"] if s["kind"] == "weight"}
        self.models = {}
        self.kernels = {}
        for step in plan["steps"]:
            if step["kind"] == "program" and step["python"] not in self.models:
                self.models[step["python"]] = python_model(step["python"])
            elif step["kind"] == "kernel":
                self.kernels[step["fingerprint"]] = kernel_operator(runtime, step["fingerprint"])

    def __call__(self, *inputs):
        return self.run(inputs, self.weights)

    def run(self, inputs, weights):
        """The plan's outputs, with `weights` ({plan value: tensor}) as its
        weight steps' values."""
        plan = self.plan
        if len(inputs) != len(plan["arguments"]):
            raise DiceRuntimeError(f"the plan takes {len(plan['arguments'])} inputs, "
                                   f"got {len(inputs)}")
        values = dict(enumerate(inputs))
        values.update(weights)
        for step in plan["steps"]:
            kind = step["kind"]
            if kind == "weight":
                continue
            args = [values[a] for a in step["args"]]
            if kind == "kernel":
                outputs = call_operator(self.kernels[step["fingerprint"]], args)
            else:
                # Factory calls inside a program (a `torch.full` of a fill)
                # make their tensors on the inputs' device.
                with self.device:
                    outputs = self.models[step["python"]](*args)
            if isinstance(outputs, torch.Tensor):
                outputs = (outputs,)
            for result, value in zip(step["results"], outputs, strict=True):
                values[result] = value
        return tuple(values[o] for o in plan["outputs"])


def kernel_operator(runtime, fingerprint):
    """The dispatcher op of an accepted kernel, with a fake implementation
    (its manifest signature) so that it can be traced."""
    kernel = runtime.kernels.get(fingerprint)
    if kernel is None:
        raise DiceRuntimeError(f"kernel '{fingerprint}' is not in {runtime.path}")
    op = _operator(kernel.operator)
    if op is None:
        raise DiceRuntimeError(f"kernel '{fingerprint}': operator {kernel.operator} is not "
                               "registered (its library did not load)")
    if any(d < 0 for shape, _ in kernel.results for d in shape):
        raise DiceRuntimeError(f"kernel '{fingerprint}' has results of dynamic shape")
    _register_fake(kernel)
    return op


def _register_fake(kernel):
    if kernel.operator in _FAKES:
        return
    results = kernel.results
    single = len(results) == 1

    def fake(*tensors):
        device = tensors[0].device if tensors else torch.device("cpu")
        made = [torch.empty(shape, dtype=dtype, device=device) for shape, dtype in results]
        return made[0] if single else made

    try:
        torch.library.register_fake(kernel.operator)(fake)
    except RuntimeError as e:
        # The op's library registered one itself; that one is as good.
        if "already has" not in str(e):
            raise
    _FAKES.add(kernel.operator)


def compile_runner(runner, example_inputs, fallback):
    """The runner as `fallback` runs it: traced and compiled by Inductor, or
    step by step ("eager")."""
    if fallback == "eager":
        return runner
    from torch._inductor.compile_fx import compile_fx
    from torch.fx.experimental.proxy_tensor import make_fx

    # The weights are traced as inputs: a real tensor met while tracing with
    # fake ones is an error when it reaches a kernel op.
    keys = list(runner.weights)
    weights = [runner.weights[k] for k in keys]
    count = len(example_inputs)

    def traced(*args):
        return runner.run(args[:count], dict(zip(keys, args[count:])))

    with outside_dynamo():  # its own fake mode, not the user's frame's
        graph = make_fx(traced, tracing_mode="fake")(*example_inputs, *weights)
        compiled = compile_fx(graph, [*example_inputs, *weights])

    def with_weights(*inputs):
        return compiled(*inputs, *weights)

    return with_weights
