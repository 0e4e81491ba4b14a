"""`torch.compile(model, backend="dice")`.

Registered through the `torch_dynamo_backends` entry point (pyproject.toml),
so it works without `import dice`. Each graph Dynamo captures goes through
dice's pipeline (compile.py); the accepted kernels run as
`torch.ops.dice.k_<fingerprint>` inside the graph and everything else is
compiled by the fallback: Inductor (the default) or eager PyTorch. Options
come through `torch.compile(..., options={...})` (options.py).

Nothing in here raises into the user's program: a graph dice cannot compile,
a failure anywhere in dice, or a kernel that fails when called, makes that
graph run on the fallback, with one warning saying why. Only a mistake in
the options themselves is an error.

    compiled = torch.compile(model, backend="dice",
                             options={"engine": "replay:kernels.jsonl"})
    with torch.no_grad():
        y = compiled(x)
    dice.backend.reports()   # what happened to each graph and request
    print(dice.backend.summary())  # the same, on one screen
"""

import itertools
import time
import traceback

from dice.backend.compile import NotCompiled, compile_graph, unsupported_reason
from dice.backend.graph_check import graph_times
from dice.backend.isolation import outside_dynamo
from dice.backend.options import BackendOptions, parse_options
from dice.backend.reports import GraphReport, RequestReport, clear_reports, record, reports, \
    summary, warn_once

__all__ = ["dice_backend", "reports", "summary", "clear_reports", "GraphReport",
           "RequestReport", "BackendOptions"]

_GRAPHS = itertools.count()


def dice_backend(gm, example_inputs, options=None, **unknown):
    """The Dynamo backend: returns the callable that runs `gm`."""
    if unknown:
        # torch.compile passes `mode` and `options` only; anything else is a
        # misuse of the backend as a plain function.
        raise TypeError(f"dice_backend() got unexpected arguments: {', '.join(unknown)}")
    parsed = parse_options(options)
    report = GraphReport(f"graph {next(_GRAPHS)}", fallback=parsed.fallback)
    record(report)
    start = time.monotonic()
    try:
        return _compile(gm, example_inputs, parsed, report)
    finally:
        report.compile_seconds = time.monotonic() - start


def _compile(gm, example_inputs, options, report):
    reason = unsupported_reason(gm, example_inputs)
    if reason is None:
        try:
            with outside_dynamo():
                compiled = compile_graph(gm, example_inputs, options, report)
            return faster_than_the_fallback(compiled, gm, example_inputs, options, report)
        except NotCompiled as e:
            reason = str(e)
        except Exception as e:  # dice's failure must not become the user's
            reason = f"{type(e).__name__}: {_first_lines(e)}"
            warn_once(f"{report.graph_id} takes the fallback ({options.fallback}): {reason}")
    report.fallback_reason = reason
    report.used_dice = False
    return fallback(gm, example_inputs, options.fallback)


def faster_than_the_fallback(compiled, gm, example_inputs, options, report):
    """The dice graph, where it beats Inductor's code for the whole graph on
    the GPU (graph_check.py); else Inductor's, with the reason reported."""
    device = example_inputs[0].device if example_inputs else None
    if options.fallback != "inductor" or device is None or device.type != "cuda":
        return GuardedGraph(compiled, gm, report)
    inductor = fallback(gm, example_inputs, "inductor")
    report.dice_graph_ms, report.inductor_graph_ms = graph_times(compiled, inductor,
                                                                 example_inputs, device)
    if report.dice_graph_ms <= report.inductor_graph_ms:
        return GuardedGraph(compiled, gm, report)
    report.used_dice = False
    for request in report.requests:
        request.used = False
    report.fallback_reason = (f"with dice's kernels the graph takes {report.dice_graph_ms:.4f} "
                              f"ms, Inductor's alone {report.inductor_graph_ms:.4f} ms")
    return inductor


def fallback(gm, example_inputs, kind):
    """`gm` as the fallback runs it; the graph runs eagerly where Inductor
    fails to compile it."""
    if kind == "eager":
        return gm.forward
    from torch._inductor.compile_fx import compile_fx
    try:
        return compile_fx(gm, example_inputs)
    except Exception as e:
        warn_once(f"Inductor did not compile a graph, which runs eagerly: "
                  f"{type(e).__name__}: {_first_lines(e)}")
        return gm.forward


class GuardedGraph:
    """The dice-compiled graph; if it ever raises, the graph runs eagerly
    from then on, and the failure is said once."""

    def __init__(self, compiled, gm, report):
        self.compiled, self.gm, self.report = compiled, gm, report
        self.failed = False

    def __call__(self, *args):
        if not self.failed:
            try:
                return self.compiled(*args)
            except Exception as e:
                self.failed = True
                self.report.fallback_reason = f"failed when run: {type(e).__name__}: " \
                                              f"{_first_lines(e)}"
                warn_once(f"{self.report.graph_id} runs eagerly from now on: "
                          f"{self.report.fallback_reason}")
        return self.gm.forward(*args)


def _first_lines(error, lines=6):
    text = str(error).strip() or traceback.format_exception_only(error)[-1].strip()
    kept = text.splitlines()[:lines]
    return "\n".join(kept) + ("\n..." if len(text.splitlines()) > lines else "")
