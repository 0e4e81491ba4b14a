"""PNG curves of `dice-train`'s per-step metrics JSONL: one figure per
metric family, x = step, one colour per training stage.

A metrics line is an object with `step`, `stage` ("sft", "rl-infill",
"rl-e2e") and any of the metrics below; a metric a run never wrote gets
no figure, and a family with none of its metrics is left out."""

import json
import math
from pathlib import Path

from dice.errors import DiceError

# family -> (title, metrics drawn in it, y-axis label)
FAMILIES = {
    "loss": ("Loss", ("loss",), "loss"),
    "reward": ("Reward and acceptance", ("reward_mean", "accept_rate"), "share / mean"),
    "policy": ("Policy update", ("kl", "clip_fraction"), "value"),
    "throughput": ("Throughput", ("tokens_per_s", "rollouts_per_s"), "per second"),
    "verify": ("Verification time", ("verify_s",), "seconds per step"),
    "lr": ("Learning rate", ("lr",), "lr"),
    "failures": ("Failure kinds", ("compile_error_rate", "deceptive_rate"), "share of rollouts"),
}
STAGES = ("sft", "rl-infill", "rl-e2e")
STAGE_COLOURS = {"sft": "tab:blue", "rl-infill": "tab:orange", "rl-e2e": "tab:green"}
LINE_STYLES = ("-", "--", ":")


class MetricsError(DiceError):
    """A metrics file that cannot be plotted; names the file and line."""


def read_metrics(path):
    """The metrics objects of a JSONL file, blank lines skipped."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise MetricsError(f"{path}: {e.strerror}") from None
    records = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise MetricsError(f"{path}:{n}: not JSON: {e.msg} at column {e.colno}") from None
        if not isinstance(record, dict):
            raise MetricsError(f"{path}:{n}: expected a JSON object")
        step = record.get("step")
        if not isinstance(step, (int, float)) or isinstance(step, bool):
            raise MetricsError(f"{path}:{n}: field 'step': expected a number")
        if not isinstance(record.get("stage", ""), str):
            raise MetricsError(f"{path}:{n}: field 'stage': expected a string")
        records.append(record)
    if not records:
        raise MetricsError(f"{path}: no metrics lines")
    return records


def series(records, metric):
    """{stage: ([steps], [values])} of one metric, non-numbers left out."""
    curves = {}
    for r in records:
        value = r.get(metric)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and \
                math.isfinite(value):
            steps, values = curves.setdefault(r.get("stage", "unknown"), ([], []))
            steps.append(r["step"])
            values.append(value)
    return curves


def stage_order(stage):
    return (STAGES.index(stage) if stage in STAGES else len(STAGES), stage)


def plot_metrics(metrics_path, out_dir=None):
    """Writes <out_dir>/<metrics stem>-<family>.png for each family with
    data (out_dir defaults to the metrics file's folder); returns the paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = read_metrics(metrics_path)
    metrics_path = Path(metrics_path)
    out_dir = Path(out_dir) if out_dir else metrics_path.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for family, (title, metrics, ylabel) in FAMILIES.items():
        drawn = {m: series(records, m) for m in metrics}
        drawn = {m: c for m, c in drawn.items() if c}
        if not drawn:
            continue
        fig, ax = plt.subplots(figsize=(7, 4))
        for style, (metric, curves) in zip(LINE_STYLES, drawn.items()):
            for stage in sorted(curves, key=stage_order):
                steps, values = curves[stage]
                ax.plot(steps, values, style, color=STAGE_COLOURS.get(stage, "tab:gray"),
                        label=f"{metric} ({stage})" if len(drawn) > 1 else stage)
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.set_ylabel(ylabel)
        if family == "lr" or (family == "loss" and all(
                v > 0 for c in drawn.values() for _, vs in c.values() for v in vs)):
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
        fig.tight_layout()
        path = out_dir / f"{metrics_path.stem}-{family}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    if not written:
        raise MetricsError(f"{metrics_path}: no known metric in any line (expected one of "
                           + ", ".join(m for _, ms, _ in FAMILIES.values() for m in ms) + ")")
    return written


def wall_clock_losses(records):
    """([seconds of training], [loss]) of one run: x is the running sum of
    `step_s`, so that runs of different model sizes compare at equal time."""
    seconds, losses, clock = [], [], 0.0
    for r in records:
        step_s, loss = r.get("step_s"), r.get("loss")
        if not isinstance(step_s, (int, float)) or isinstance(step_s, bool):
            continue
        clock += step_s
        if isinstance(loss, (int, float)) and not isinstance(loss, bool) and math.isfinite(loss):
            seconds.append(clock)
            losses.append(loss)
    return seconds, losses


def plot_sweep(runs, path):
    """One PNG of the SFT loss against training seconds, a curve per run
    ({label: metrics path}): the model-size sweep's figure. Returns path."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for label, metrics_path in runs.items():
        seconds, losses = wall_clock_losses(read_metrics(metrics_path))
        if not seconds:
            plt.close(fig)
            raise MetricsError(f"{metrics_path}: no line with both 'step_s' and 'loss'")
        ax.plot(seconds, losses, label=label)
    ax.set_title("SFT loss at equal training time")
    ax.set_xlabel("seconds of training")
    ax.set_ylabel("loss")
    ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
