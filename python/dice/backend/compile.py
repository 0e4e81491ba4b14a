"""One Dynamo graph through dice: export, the pipeline, the rebuilt graph.

    graph ── torch.export ──▶ torch-mlir (linalg-on-tensors) ──▶ dice-opt
      outline + scaffold: the kernel requests (and their partitions, timed
        by Inductor on the GPU: the speed to beat)
      --dice-pipeline on that IR (outline and scaffold have nothing left
        to do): candidates, verdicts, the accepted kernels lowered
    dice-plan of the lowered function ──▶ PlanRunner ──▶ the fallback
      compiles it (Inductor traces it, kernels stay external calls)

The partitions are the pipeline's own kernel requests, formed by
`dice-outline` at the chosen granularity, so both drivers of the passes
(`dice compile` and this backend) partition a program the same way.
compile_graph raises on any failure; the backend turns that into the
fallback for the graph (backend/__init__.py).
"""

import tempfile
import time
from pathlib import Path

import torch

from dice import runtime as dice_runtime
from dice.decompositions import corrected_python_kernels
from dice.backend.baseline import partition_times, write_times
from dice.backend.options import toml_text
from dice.backend.rebuild import PlanRunner, compile_runner
from dice.backend.reports import RequestReport, warn_once
from dice.export_cache import ExportCache
from dice.pipeline import (compile_pipeline, find_tool, first_line, op_names, plan_of,
                           read_report, request_steps, run)
from dice.torch_mlir_import import export_linalg_on_tensors

class NotCompiled(Exception):
    """dice compiled nothing for this graph, for a reason that is not a
    failure (no engine, nothing accepted): the graph takes the fallback."""


def unsupported_reason(gm, example_inputs):
    """Why dice does not compile this graph at all, or None."""
    if not all(isinstance(x, torch.Tensor) for x in example_inputs):
        kinds = sorted({type(x).__name__ for x in example_inputs
                        if not isinstance(x, torch.Tensor)})
        return (f"graph inputs of type {', '.join(kinds)} (dynamic shapes or Python "
                "scalars): dice compiles graphs of static tensors only so far; use "
                "torch.compile(..., dynamic=False) to get one graph per shape")
    if torch.is_grad_enabled() and any(x.requires_grad for x in example_inputs):
        return ("the graph needs autograd (inputs that require grad, grad mode on) and "
                "dice has no backward kernels yet; run inference under torch.no_grad() "
                "or torch.inference_mode()")
    return None


def export_graph(gm, example_inputs, export_cache=None):
    """The graph as linalg-on-tensors text; refuses graphs that mutate their
    inputs (the import would drop the mutation). With an export cache
    (a folder), torch-mlir's export is recorded there or, where torch-mlir
    is not installed, found there (dice/export_cache.py)."""
    with corrected_python_kernels():
        program = torch.export.export(gm, tuple(example_inputs), strict=False)
    signature = program.graph_signature
    if signature.user_inputs_to_mutate or signature.buffers_to_mutate:
        raise NotCompiled("the graph writes to its inputs in place, which dice does "
                          "not compile yet")
    def export():
        return export_linalg_on_tensors(program, example_inputs, func_name="forward")

    if not export_cache:
        return export()
    return ExportCache(export_cache).export(gm, example_inputs, export)


def output_count(gm):
    (outputs,) = [n for n in gm.graph.nodes if n.op == "output"]
    value = outputs.args[0]
    return len(value) if isinstance(value, (tuple, list)) else 1


def summarise(candidates, statuses):
    """(status, speedup, kernel_ms, reason) of a request's candidates (the
    JSON report's): the best one's, by `statuses` (the report's, best
    first), then speed."""
    if not candidates:
        return "no candidates", None, None, ""
    best = min(candidates, key=lambda c: (statuses.index(c["status"])
                                          if c["status"] in statuses else len(statuses),
                                          -(c["verdict"].get("speedup") or 0)))
    verdict = best["verdict"]
    return (best["status"], verdict.get("speedup"), verdict.get("kernel_ms"),
            first_line(verdict.get("reason"), 100))


def compile_graph(gm, example_inputs, options, report):
    """The compiled callable of a graph with dice kernels in it; raises
    NotCompiled (or any error) when the graph should take the fallback."""
    device = example_inputs[0].device if example_inputs else torch.device("cpu")
    engine = options.engine_spec()
    mlir = export_graph(gm, example_inputs, options.export_cache)
    with tempfile.TemporaryDirectory(prefix="dice-backend-") as tmp:
        tmp = Path(tmp)
        source = tmp / "graph.mlir"
        source.write_text(mlir)
        outlined = run([find_tool("dice-opt"), source,
                        f"--dice-outline=granularity={options.granularity}",
                        "--dice-scaffold"])
        requests = request_steps(outlined.stdout)
        # The pipeline goes on from this IR: its outline finds the requests
        # formed and its scaffold keeps their scaffolds (once per graph).
        source = tmp / "outlined.mlir"
        source.write_text(outlined.stdout)
        report.requests = [RequestReport(s["request"], " ".join(op_names(s["program"])))
                           for s in requests]
        if not requests:
            raise NotCompiled("dice-outline formed no kernel request in the graph")
        if engine is None:
            warn_once("engine 'none' asks for no candidates: every graph runs on the "
                      f"fallback ({options.fallback})")
            raise NotCompiled("engine 'none': no candidates")

        toml = {section: dict(keys) for section, keys in options.toml.items()}
        verifier = toml.setdefault("verifier", {})
        verifier["baseline"] = options.baseline
        if options.baseline in ("inductor", "fastest") and device.type == "cuda" \
                and "baseline_times" not in verifier:
            for_timing = [{"fingerprint": s["request"], "program": s["program"],
                           "python": s["python"]} for s in requests]
            times = partition_times(for_timing, device)
            write_times(tmp / "baseline-times.json", times)
            verifier["baseline_times"] = str(tmp / "baseline-times.json")
            for r in report.requests:
                r.eager_ms = times[r.fingerprint]["eager_ms"]
                r.inductor_ms = times[r.fingerprint]["inductor_ms"]
        config = tmp / "dice.toml"
        config.write_text(toml_text(toml))

        pipeline_start = time.monotonic()
        lowered = tmp / "lowered.mlir"
        compile_pipeline(source, config, engine, options.artifacts, tmp / "report.json",
                         jobs=options.jobs, granularity=options.granularity, output=lowered,
                         extra=[f"nvcc={options.nvcc}"] if options.nvcc else [])
        report.verify_seconds = time.monotonic() - pipeline_start
        resolved = read_report(tmp / "report.json")
        for note in resolved["remarks"]:
            if note.startswith("dice-verify: "):
                warn_once(note)
        plan = plan_of(lowered.read_text())

    candidates = {r["fingerprint"]: r["candidates"] for r in resolved["requests"]}
    kernels = {s["fingerprint"] for s in plan["steps"] if s["kind"] == "kernel"}
    for r in report.requests:
        r.status, r.speedup, r.kernel_ms, r.reason = summarise(
            candidates.get(r.fingerprint, []), resolved["verdict_statuses"])
        r.used = r.fingerprint in kernels
    if not kernels:
        counts = {}
        for r in report.requests:
            counts[r.status] = counts.get(r.status, 0) + 1
        raise NotCompiled("no candidate was accepted (" + ", ".join(
            f"{n} {status}" for status, n in sorted(counts.items())) + ")")

    if len(plan["outputs"]) != output_count(gm):
        raise RuntimeError(f"the lowered function returns {len(plan['outputs'])} values, "
                           f"the graph {output_count(gm)}")
    runtime = dice_runtime.load(options.artifacts / "manifest.json")
    runner = PlanRunner(plan, runtime, device)
    compiled = compile_runner(runner, example_inputs, options.fallback)
    report.used_dice = True
    return compiled
