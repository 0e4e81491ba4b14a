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


def _headline(reason, width=140):
    """A reason's first line; where it only introduces what follows (a
    tool's "exited with 1:"), with the first error line below it."""
    lines = [line.strip() for line in reason.splitlines() if line.strip()]
    head = lines[0] if lines else ""
    if head.endswith(":") and len(lines) > 1:
        head += " " + next((line for line in lines[1:] if "error" in line), lines[1])
    return head if len(head) <= width else head[:width - 3] + "..."


def summary(graph_reports=None):
    """One screen on what the backend did in this process (or with
    `graph_reports`): graphs, kernel requests and their verdicts, the
    kernels running, each graph's time with them against Inductor's alone,
    and the time spent compiling."""
    graph_reports = reports() if graph_reports is None else graph_reports
    requests = [q for g in graph_reports for q in g.requests]
    statuses = {}
    for q in requests:
        statuses[q.status] = statuses.get(q.status, 0) + 1
    used = [g for g in graph_reports if g.used_dice]
    lines = [f"dice: {len(graph_reports)} graphs, {len(used)} with dice kernels; "
             f"{len(requests)} kernel requests ("
             + (", ".join(f"{n} {s}" for s, n in sorted(statuses.items())) or "none")
             + f"), {sum(bool(q.used) for q in requests)} kernels running",
             f"      compiling took {sum(g.compile_seconds for g in graph_reports):.1f} s"
             + (f", {sum(g.verify_seconds or 0 for g in graph_reports):.1f} s of it "
                "generating and verifying" if any(g.verify_seconds for g in graph_reports)
                else "")]
    for g in graph_reports:
        if g.dice_graph_ms is not None:
            lines.append(f"      {g.graph_id}: {g.dice_graph_ms:.4f} ms with dice's kernels, "
                         f"{g.inductor_graph_ms:.4f} ms as Inductor alone "
                         f"({g.inductor_graph_ms / g.dice_graph_ms:.2f}x): "
                         + ("dice's runs" if g.used_dice else "Inductor's runs"))
        for q in g.requests:
            if q.used and q.speedup:
                vs = [f"{name} {ms / q.kernel_ms:.2f}x" for name, ms in
                      (("eager", q.eager_ms), ("Inductor", q.inductor_ms))
                      if ms and q.kernel_ms]
                lines.append(f"      k_{q.fingerprint[:12]} {q.computes[:32]:<32} "
                             + (", ".join(vs) if vs else f"{q.speedup:.2f}x"))
    fallbacks = {}
    for g in graph_reports:
        if g.fallback_reason:
            why = _headline(g.fallback_reason)
            fallbacks[why] = fallbacks.get(why, 0) + 1
    for why, n in sorted(fallbacks.items(), key=lambda item: -item[1]):
        lines.append(f"      {n} graph{'s' if n > 1 else ''} on the fallback: {why}")
    return "\n".join(lines)


def warn_once(message):
    """A UserWarning, unless this process has said `message` already."""
    if message in _SAID:
        return
    _SAID.add(message)
    warnings.warn(f"dice: {message}", UserWarning, stacklevel=3)
