"""`dice curate report`: the kept pairs as CuKe-format JSONL, and a report
of what was kept and dropped, by reason, with a histogram of the speedups
over eager. Needs no GPU: it reads the work folder that `prepare` and
`verify` filled, so a different threshold is a new report, not a new run.
"""

import json
import math
import statistics
from collections import Counter
from pathlib import Path

from dice.curate.measure import FAILURES_FILE, TIMES_FILE
from dice.curate.prepare import read_work
from dice.curate.verify import DEFAULT_THRESHOLD, VERDICTS_FILE
from dice.errors import DiceError
from dice.jsonl import read_objects

TIMED = ("accepted", "slow")   # statuses whose verdict carries a speedup


def _read_jsonl(path, required):
    if not path.exists() and not required:
        return []
    return read_objects(path, missing_hint="; run `dice curate verify` on a GPU machine first")


def outcomes(work, threshold=DEFAULT_THRESHOLD):
    """One dict per pair read: id, level, kept, reason (the category a
    dropped pair is counted under), detail, and the verdict's numbers."""
    work = Path(work)
    lines = read_work(work)
    verdicts = {v["id"]: v["verdict"] for v in _read_jsonl(work / VERDICTS_FILE, True)}
    failures = {f["fingerprint"]: f["reason"]
                for f in _read_jsonl(work / FAILURES_FILE, False)}
    times = {}
    if (work / TIMES_FILE).exists():
        times = json.loads((work / TIMES_FILE).read_text()).get("times", {})
    result = []
    for line in lines:
        out = {"id": line["id"], "level": line["level"], "line": line, "kept": False}
        if "dropped" in line:
            out.update(reason=line["dropped"], detail=line["reason"])
            result.append(out)
            continue
        verdict = verdicts.get(line["id"])
        if verdict is None:
            raise DiceError(f"{work / VERDICTS_FILE}: no verdict for pair {line['id']}; "
                            "the verify step did not finish: run it again")
        status, speedup = verdict["status"], verdict.get("speedup")
        measured = times.get(line["fingerprint"], {})
        out.update(status=status, speedup=speedup, kernel_ms=verdict.get("kernel_ms"),
                   eager_ms=measured.get("eager_ms"), inductor_ms=measured.get("inductor_ms"),
                   gpu=verdict.get("gpu", ""), driver=verdict.get("driver", ""),
                   detail=verdict.get("reason", ""))
        if out["inductor_ms"] and out["kernel_ms"]:
            out["speedup_inductor"] = out["inductor_ms"] / out["kernel_ms"]
        if status in TIMED and speedup is not None and speedup >= threshold:
            out.update(kept=True, reason="kept")
        elif status in TIMED:
            out.update(reason=f"below {threshold:g}x over eager")
        elif line["fingerprint"] in failures:
            out.update(reason="eager run failed", detail=failures[line["fingerprint"]])
        else:
            out["reason"] = status
        result.append(out)
    return result


def curated_row(o):
    """A kept pair in the CuKe shape: the row as read (so the project's
    infilling fields survive), with the canonical fields and what was
    measured."""
    line = o["line"]
    row = {**line["row"], "id": o["id"], "level": o["level"],
           "pytorch_code": line["pytorch_code"], "cuda_code": line["cuda_code"],
           "speedup": o["speedup"], "eager_ms": o["eager_ms"], "kernel_ms": o["kernel_ms"],
           "gpu": o["gpu"]}
    if o.get("inductor_ms"):
        row.update(inductor_ms=o["inductor_ms"], speedup_inductor=o["speedup_inductor"])
    return row


def plot_speedups(results, threshold, path):
    """A histogram of log2 speedup over eager of every pair that was timed."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    timed = [o for o in results if o.get("status") in TIMED and o.get("speedup")]
    fig, ax = plt.subplots(figsize=(7, 4))
    if timed:
        values = [math.log2(o["speedup"]) for o in timed]
        low, high = math.floor(min(values + [0])), math.ceil(max(values + [1]))
        bins = [low + k / 4 for k in range(int((high - low) * 4) + 1)]
        kept = [v for v, o in zip(values, timed) if o["kept"]]
        dropped = [v for v, o in zip(values, timed) if not o["kept"]]
        ax.hist([dropped, kept], bins=bins, stacked=True, color=["#bbbbbb", "#2b7bba"],
                label=[f"dropped ({len(dropped)})", f"kept ({len(kept)})"])
        ax.axvline(math.log2(threshold), color="#d62728", linestyle="--",
                   label=f"threshold {threshold:g}x")
        ticks = list(range(low, high + 1))
        ax.set_xticks(ticks, [f"{2.0 ** t:g}x" for t in ticks])
        ax.legend()
    else:
        ax.text(0.5, 0.5, "no pair was timed", ha="center", va="center",
                transform=ax.transAxes)
    ax.set_xlabel("speedup over eager PyTorch (log scale)")
    ax.set_ylabel("pairs")
    gpu = next((o["gpu"] for o in timed if o.get("gpu")), "")
    ax.set_title(f"dice-curate: correct kernels by speedup{' on ' + gpu if gpu else ''}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _cell(text, width=90):
    text = (text or "").splitlines()[0] if text else ""
    text = text.replace("|", "\\|")
    return text if len(text) <= width else text[:width - 3] + "..."


def markdown(results, threshold, summary):
    gpu = summary["gpu"] or "no GPU"
    lines = ["# dice-curate report", "",
             f"{summary['pairs']} pairs read; **{summary['kept']} kept**: built, not "
             f"deceptive, correct and at least {threshold:g}x over eager PyTorch "
             f"(both timed as GPU kernel time, L2 flushed; {gpu}"
             + (f", driver {summary['driver']}" if summary["driver"] else "") + ").", "",
             "| outcome | pairs |", "| --- | --- |"]
    lines += [f"| {reason} | {n} |" for reason, n in summary["by_reason"].items()]
    speeds = summary["speedup_of_kept"]
    if speeds:
        lines += ["", f"Speedup of the kept pairs over eager: median {speeds['median']:.2f}x, "
                      f"min {speeds['min']:.2f}x, max {speeds['max']:.2f}x."]
    lines += ["", "![speedups](speedups.png)", "",
              "| pair | level | outcome | speedup over eager | over Inductor | why |",
              "| --- | --- | --- | --- | --- | --- |"]
    for o in results:
        speed = f"{o['speedup']:.2f}x" if o.get("speedup") else ""
        over_inductor = f"{o['speedup_inductor']:.2f}x" if o.get("speedup_inductor") else ""
        lines.append(f"| {o['id']} | {o['level']} | {o['reason']} | {speed} | "
                     f"{over_inductor} | {'' if o['kept'] else _cell(o.get('detail'))} |")
    return "\n".join(lines) + "\n"


def report(work, out, threshold=DEFAULT_THRESHOLD):
    """Writes curated.jsonl, report.json, report.md and speedups.png to
    `out`; returns the summary."""
    if threshold <= 0:
        raise DiceError(f"--threshold must be positive, got {threshold}")
    results = outcomes(work, threshold)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    kept = [o for o in results if o["kept"]]
    speeds = sorted(o["speedup"] for o in kept)
    summary = {
        "pairs": len(results), "kept": len(kept), "threshold": threshold,
        "gpu": next((o["gpu"] for o in results if o.get("gpu")), ""),
        "driver": next((o["driver"] for o in results if o.get("driver")), ""),
        "by_reason": dict(Counter(o["reason"] for o in results).most_common()),
        "speedup_of_kept": {"median": statistics.median(speeds), "min": speeds[0],
                            "max": speeds[-1]} if speeds else None,
    }
    (out / "curated.jsonl").write_text("".join(json.dumps(curated_row(o)) + "\n" for o in kept))
    (out / "report.json").write_text(json.dumps({
        **summary,
        "pairs_detail": [{k: v for k, v in o.items() if k != "line"} for o in results],
    }, indent=1) + "\n")
    (out / "report.md").write_text(markdown(results, threshold, summary))
    plot_speedups(results, threshold, out / "speedups.png")
    return summary
