"""`dice bench record-exports FOLDER --export-cache DIR`: torch-mlir's export
of every graph the tasks of a folder hand torch.compile, recorded without
compiling anything, for `dice bench tasks --export-cache DIR` on a machine
without torch-mlir (docs/gpu-node.md).

Each task is loaded and called as `dice bench tasks` does (built under seed
42, the first trial's inputs, no grad), with a backend that exports each
graph the dice backend would compile (dice.backend.compile.export_graph,
which records into the cache) and runs it eagerly.
"""

from dataclasses import dataclass, field

import torch

from dice.backend.compile import NotCompiled, export_graph, unsupported_reason
from dice.bench.tasks import find_tasks, load_task
from dice.errors import DiceError
from dice.bench.run import error_line
from dice.export_cache import torch_mlir_available


@dataclass
class Recorded:
    tasks: int = 0
    graphs: int = 0
    exported: int = 0
    skipped: list = field(default_factory=list)   # (task, why) dice would not compile


def record_exports(folder, cache, name_filter=None, limit=None, progress=None):
    if not torch_mlir_available():
        raise DiceError("record-exports needs torch-mlir, which is not installed here")
    recorded = Recorded()
    for task in find_tasks(folder, name_filter, limit):
        recorded.tasks += 1

        def backend(gm, example_inputs):
            recorded.graphs += 1
            why = unsupported_reason(gm, example_inputs)
            try:
                if why is None:
                    export_graph(gm, example_inputs, cache)
                    recorded.exported += 1
            except NotCompiled as e:
                why = str(e)
            except Exception as e:  # the backend would fall back here too
                why = error_line(e)
            if why is not None:
                recorded.skipped.append((task.name, why))
            return gm.forward

        try:
            model, inputs = load_task(task, torch.device("cpu"))
            torch._dynamo.reset()
            with torch.no_grad():
                torch.compile(model, backend=backend)(*inputs(0))
        except Exception as e:  # a task that does not run records nothing
            recorded.skipped.append((task.name, error_line(e)))
        if progress:
            progress(recorded)
    torch._dynamo.reset()
    return recorded
