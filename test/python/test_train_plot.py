"""`dice train plot`: one PNG per metric family with data, beside the
metrics file or in --out, and errors that name the line for bad input."""

import json

import pytest

from dice.cli import main
from dice.train.plot import FAMILIES, MetricsError, plot_metrics, read_metrics, series


def write_metrics(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def training_run():
    records = []
    for step in range(30):
        stage = "sft" if step < 10 else "rl-infill" if step < 20 else "rl-e2e"
        record = {"step": step, "stage": stage, "lr": 1e-5 if stage == "sft" else 1e-6,
                  "tokens_per_s": 900.0 + step}
        if stage == "sft":
            record["loss"] = 2.0 / (step + 1)
        else:
            record.update(reward_mean=step / 30, accept_rate=0.2, kl=0.001, clip_fraction=0.05,
                          verify_s=1.5, compile_error_rate=0.3, deceptive_rate=0.0)
        records.append(record)
    return records


def is_png(path):
    return path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_one_png_per_family_beside_the_metrics(tmp_path, capsys):
    metrics = write_metrics(tmp_path / "run.jsonl", training_run())
    assert main(["train", "plot", str(metrics)]) == 0
    written = sorted(tmp_path.glob("run-*.png"))
    # rollouts_per_s is never written, but throughput has tokens_per_s.
    assert [p.name for p in written] == sorted(f"run-{f}.png" for f in FAMILIES)
    assert all(is_png(p) for p in written)
    assert str(written[0]) in capsys.readouterr().out


def test_families_without_data_are_left_out(tmp_path):
    metrics = write_metrics(tmp_path / "m.jsonl",
                            [{"step": s, "stage": "sft", "loss": 1.0 / (s + 1)} for s in range(5)])
    written = plot_metrics(metrics, tmp_path / "plots")
    assert [p.name for p in written] == ["m-loss.png"]


def test_series_split_by_stage_and_skip_missing_values():
    curves = series(training_run(), "reward_mean")
    assert sorted(curves) == ["rl-e2e", "rl-infill"]
    assert curves["rl-infill"][0] == list(range(10, 20))


@pytest.mark.parametrize("lines, words", [
    (['{"step": 1, "loss": 2}', '{"step": 2, "loss": '], "m.jsonl:2: not JSON"),
    (['{"step": 1}', '', '[1]'], "m.jsonl:3: expected a JSON object"),
    (['{"loss": 1}'], "m.jsonl:1: field 'step'"),
    (['{"step": 1, "stage": 3}'], "m.jsonl:1: field 'stage'"),
    ([''], "no metrics lines"),
])
def test_malformed_metrics_name_the_line(tmp_path, lines, words):
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(MetricsError) as e:
        read_metrics(path)
    assert words in str(e.value)


def test_the_cli_reports_errors(tmp_path, capsys):
    path = tmp_path / "m.jsonl"
    path.write_text('{"step": 1, "unknown": 3}\n')
    assert main(["train", "plot", str(path)]) == 1
    assert "no known metric" in capsys.readouterr().err


def test_the_sweep_plot_puts_runs_on_one_time_axis(tmp_path):
    from dice.train.plot import wall_clock_losses
    fast = write_metrics(tmp_path / "small.jsonl", [
        {"step": s, "stage": "sft", "loss": 2.0 / (s + 1), "step_s": 0.25} for s in range(8)])
    slow = write_metrics(tmp_path / "big.jsonl", [
        {"step": s, "stage": "sft", "loss": 1.0 / (s + 1), "step_s": 1.0} for s in range(2)])
    assert wall_clock_losses(read_metrics(fast))[0] == [0.25 * (s + 1) for s in range(8)]
    assert wall_clock_losses(read_metrics(slow)) == ([1.0, 2.0], [1.0, 0.5])
    out = tmp_path / "figures" / "sweep.png"
    assert main(["train", "plot-sweep", f"7m={fast}", f"30m={slow}", "--out", str(out)]) == 0
    assert is_png(out)


def test_the_sweep_plot_names_a_run_without_timings(tmp_path, capsys):
    from dice.train.plot import plot_sweep
    with pytest.raises(MetricsError, match="no line with both"):
        plot_sweep({"a": write_metrics(tmp_path / "u.jsonl", [{"step": 0, "loss": 1.0}])},
                   tmp_path / "u.png")
    untimed = write_metrics(tmp_path / "old.jsonl", [{"step": 0, "stage": "sft", "loss": 1.0}])
    assert main(["train", "plot-sweep", f"a={untimed}", "--out", str(tmp_path / "s.png")]) != 0
    assert "old.jsonl: no line with both 'step_s' and 'loss'" in capsys.readouterr().err
    assert main(["train", "plot-sweep", str(untimed), "--out", str(tmp_path / "s.png")]) != 0
    assert "expected LABEL=METRICS.jsonl" in capsys.readouterr().err
