"""What the backend did with each graph Dynamo gave it, and its warnings.

`dice.backend.reports()` lists one GraphReport per graph compiled in this
process, in order; `dice bench` and tests read them. Warnings are said once
per process and message: a model compiled many times (graph breaks,
recompilations) does not repeat why it fell back.
"""

import warnings
from dataclasses import dataclass, field


@dataclass
class RequestReport:
    """One kernel request of a graph and what became of it."""
    fingerprint: str
    computes: str = ""            # its torch-level ops, for tables
    status: str = "no candidates"  # the best candidate's verdict status
    used: bool = False            # its kernel runs in the compiled graph
    speedup: float | None = None  # against the verifier's baseline
    kernel_ms: float | None = None
    eager_ms: float | None = None     # the partition's reference program, eagerly
    inductor_ms: float | None = None  # the partition as Inductor compiles it
    reason: str = ""


@dataclass
class GraphReport:
    graph_id: str                 # "<module>.<graph index>", for messages
    used_dice: bool = False       # dice compiled it (some kernel may run)
    fallback: str = "inductor"
    fallback_reason: str | None = None  # why the whole graph took the fallback
    compile_seconds: float = 0.0
    verify_seconds: float | None = None  # the dice-opt pipeline's wall time
    # One call of the whole graph with dice's kernels and as Inductor alone
    # compiles it, timed in turns on the GPU (graph_check.py).
    dice_graph_ms: float | None = None
    inductor_graph_ms: float | None = None
    requests: list = field(default_factory=list)

    @property
    def kernels_used(self):
        return sum(r.used for r in self.requests)


_REPORTS = []
_SAID = set()


def reports():
    """The GraphReports of this process, oldest first."""
    return list(_REPORTS)


def clear_reports():
    _REPORTS.clear()


def record(report):
    _REPORTS.append(report)


def warn_once(message):
    """A UserWarning, unless this process has said `message` already."""
    if message in _SAID:
        return
    _SAID.add(message)
    warnings.warn(f"dice: {message}", UserWarning, stacklevel=3)
