"""The run's files: eval_results.json (KernelBench's shape), summary.json
(the metrics and what they were measured on), results.md and speedups.png.

eval_results.json maps each task to a list of samples as KernelBench's
does; dice's samples are its granularities, in the order run (sample_id 0
is the first granularity), each with KernelBench's fields (compiled,
correctness, metadata, runtime, runtime_stats; runtime is the median in
ms, -1.0 when not timed) and dice's own beside them."""

import json
from dataclasses import asdict
from pathlib import Path

from dice.bench import metrics
from dice.errors import DiceError


def _metadata(result, environment):
    meta = {"hardware": environment["hardware"], "device": environment["device"],
            "correctness_trials": f"({result.trials_passed} / {result.trials})",
            "max_difference": result.max_difference, "avg_difference": result.avg_difference,
            "graphs": result.graphs, "graphs_dice": result.graphs_dice,
            "fallback_reasons": result.fallback_reasons,
            "request_statuses": result.request_statuses}
    if result.error:
        # KernelBench's names for where a sample failed.
        kind = ("compilation_error" if not result.compiled
                else "correctness_issue" if result.error.startswith("trial ")
                else "runtime_error")
        meta[kind] = result.error
    if result.baseline_errors:
        meta["baseline_errors"] = result.baseline_errors
    return meta


def eval_results(run):
    out = {}
    for result in run.results:
        samples = out.setdefault(result.task, [])
        samples.append({
            "sample_id": len(samples),
            "compiled": result.compiled,
            "correctness": result.correct,
            "metadata": _metadata(result, run.environment),
            "runtime": result.dice_ms if result.dice_ms is not None else -1.0,
            "runtime_stats": result.dice_stats or {},
            "granularity": result.granularity,
            "eager_ms": result.eager_ms,
            "inductor_ms": result.inductor_ms,
            "dice_ms": result.dice_ms,
            "speedup_vs_eager": result.speedup_vs_eager,
            "speedup_vs_inductor": result.speedup_vs_inductor,
            "noise": result.noise,
            "slower_than_inductor": result.slower_than_inductor,
            "requests": {"accepted": result.requests_accepted, "used": result.requests_used,
                         "total": result.requests_total},
            "compile_s": result.compile_s,
            "verify_s": result.verify_s,
        })
    return out


def summary(run):
    options = {k: str(v) if isinstance(v, Path) else v for k, v in asdict(run.options).items()}
    return {"environment": run.environment, "options": options,
            "p_values": list(metrics.P_VALUES), "granularities": run.summary}


def _number(value, fmt):
    return "–" if value is None else format(value, fmt)


def _cell(text):
    return (text or "").replace("|", "\\|")


def _fast(entry, p):
    key = metrics.fast_key(p)
    return " / ".join(f"{entry['fast_p'][b][key]:.2f}" for b in metrics.BASELINES)


def _summary_lines(run):
    env, opts = run.environment, run.options
    lines = [f"# dice bench tasks: {opts.folder}", "",
             f"- hardware: {env['hardware']} ({env['device']}); timing: {env['timing']}",
             f"- torch {env['torch']}; dice commit {env['dice_commit'] or 'unknown'}"
             + (f"; tasks commit {env['tasks_commit']}" if env["tasks_commit"] else ""),
             f"- {opts.trials} correctness trials (atol {opts.atol:g}, rtol {opts.rtol:g}), "
             f"median of {opts.runs} timed runs; engine {opts.engine or 'from the configuration'}",
             "", "## Summary", "",
             "fast_p and geometric-mean speedup as eager / Inductor: speedup = baseline ms "
             "/ dice ms; fast_p is the share of all tasks that are correct and more than p "
             "times faster.", "",
             "| granularity | tasks | compiled | correct | "
             + " | ".join(metrics.fast_key(p) for p in metrics.P_VALUES)
             + " | geomean (correct) | requests accepted / total | slower than Inductor "
             "| compile s | verify s |",
             "| --- |" + " ---: |" * (8 + len(metrics.P_VALUES))]
    for g, s in run.summary.items():
        geo = " / ".join(f"{s['geomean_speedup'][b]:.2f}x" for b in metrics.BASELINES)
        lines.append(f"| {g} | {s['tasks']} | {s['compiled_rate']:.0%} | {s['correct_rate']:.0%} "
                     + "".join(f"| {_fast(s, p)} " for p in metrics.P_VALUES) + f"| {geo} "
                     f"| {s['requests']['accepted']} / {s['requests']['total']} "
                     f"| {len(s['slower_than_inductor'])} "
                     f"| {s['compile_s']:.1f} | {_number(s['verify_s'], '.1f')} |")
    slower = sorted({t for s in run.summary.values() for t in s["slower_than_inductor"]})
    lines += ["", "Slower than Inductor beyond the noise measured beside it (Inductor timed "
              "twice in the same loop): " + (", ".join(slower) if slower else "none") + "."]
    return lines


def markdown_summary(run):
    """What results.md says before its table of tasks."""
    return "\n".join(_summary_lines(run)) + "\n"


def markdown(run):
    lines = _summary_lines(run)
    lines += ["", "## Tasks", "",
              "| task | granularity | compiled | correct | eager ms | Inductor ms | dice ms "
              "| vs eager | vs Inductor | noise | requests | compile s | verify s | note |",
              "| --- " * 4 + "| ---: " * 9 + "| --- |"]
    for r in run.results:
        lines.append(
            f"| {_cell(r.task)} | {r.granularity} | {'yes' if r.compiled else 'no'} "
            f"| {'yes' if r.correct else 'no'} | {_number(r.eager_ms, '.3f')} "
            f"| {_number(r.inductor_ms, '.3f')} | {_number(r.dice_ms, '.3f')} "
            f"| {_number(r.speedup_vs_eager, '.2f')} | {_number(r.speedup_vs_inductor, '.2f')} "
            f"| {_number(r.noise, '.1%')} | {r.requests_accepted} / {r.requests_total} | {_number(r.compile_s, '.1f')} "
            f"| {_number(r.verify_s, '.1f')} | {_cell(r.error)} |")
    return "\n".join(lines) + "\n"


def write_all(run, out):
    """Writes the four files into `out`; returns their paths by name."""
    from dice.bench.plot import speedup_plot
    try:
        out.mkdir(parents=True, exist_ok=True)
        files = {"eval_results": out / "eval_results.json", "summary": out / "summary.json",
                 "markdown": out / "results.md", "plot": out / "speedups.png"}
        files["eval_results"].write_text(json.dumps(eval_results(run), indent=2) + "\n")
        files["summary"].write_text(json.dumps(summary(run), indent=2) + "\n")
        files["markdown"].write_text(markdown(run))
        speedup_plot(run, files["plot"])
    except OSError as e:
        raise DiceError(f"cannot write the results into {out}: {e}") from None
    return files
