"""`dice bench tasks DIR`: KernelBench's metrics on hand-computed cases, and
whole runs over a folder of three tasks (one of them broken) through the
dice backend on CPU, from dice.cli.main and from `python -m dice`."""

import json
import math
import os
import subprocess
import sys

import pytest

from build_tree import BUILD_DIR, SOURCE_ROOT
from dice.bench import metrics
from dice.bench.run import TaskResult
from dice.bench.tasks import find_tasks
from dice.cli import main
from dice.errors import DiceError

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

TASKS = {
    "level1/2_relu_scale.py": """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.relu(x) * self.scale

def get_init_inputs():
    return [0.5]

def get_inputs():
    return [torch.randn(64, 128)]
""",
    "level1/10_linear_tanh.py": """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.proj = nn.Linear(features, features)

    def forward(self, x):
        return torch.tanh(self.proj(x))

def get_init_inputs():
    return [32]

def get_inputs():
    return [torch.randn(16, 32)]
""",
    "level2/1_broken.py": """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        raise RuntimeError("this task cannot run")

def get_init_inputs():
    return []

def get_inputs():
    return [torch.randn(4, 4)]
""",
    # Not a task: no Model. Importing it would fail, so it must not be imported.
    "helpers.py": "raise SystemExit('helpers.py is not a task')\n",
}
GOOD = ["level1/2_relu_scale", "level1/10_linear_tanh"]
BROKEN = "level2/1_broken"
EVAL_KEYS = {"sample_id", "compiled", "correctness", "metadata", "runtime", "runtime_stats",
             "granularity", "eager_ms", "inductor_ms", "dice_ms", "speedup_vs_eager",
             "speedup_vs_inductor", "noise", "slower_than_inductor", "requests",
             "compile_s", "verify_s"}
RUN_FLAGS = ["--device", "cpu", "--runs", "3", "--trials", "2", "--engine", "none"]


# KernelBench's definitions, on results small enough to compute by hand.

def test_fast_p_counts_correct_and_faster_over_all_tasks():
    correct = [True, True, False, True, True]
    speedups = [1.5, 0.8, 3.0, None, 1.0]
    # p = 0: tasks 0, 1 and 4 (task 2 is fast but wrong, task 3 was not timed).
    assert metrics.fast_p(correct, speedups, 0.0) == pytest.approx(3 / 5)
    # p = 1: only task 0; exactly 1.0x is not faster.
    assert metrics.fast_p(correct, speedups, 1.0) == pytest.approx(1 / 5)
    assert metrics.fast_p(correct, speedups, 2.0) == 0.0
    assert metrics.fast_p([], [], 0.0) == 0.0


def test_geomean_speedup_of_correct_tasks_only():
    correct = [True, True, False, True]
    speedups = [2.0, 0.5, 100.0, 4.0]
    assert metrics.geomean_speedup(correct, speedups) == pytest.approx((2.0 * 0.5 * 4.0) ** (1 / 3))
    assert metrics.geomean_speedup([False, False], [3.0, 2.0]) == 0.0


def test_slower_than_inductor_means_beyond_the_noise_measured_beside_it():
    def result(name, dice_ms, inductor_ms, noise):
        return TaskResult(name, "fusion", compiled=True, correct=True, dice_ms=dice_ms,
                          inductor_ms=inductor_ms, noise=noise)
    results = [result("inside the noise", 1.04, 1.0, 0.05),
               result("beyond it", 1.06, 1.0, 0.05),
               result("faster", 0.5, 1.0, 0.0),
               TaskResult("not timed", "fusion", compiled=True)]
    assert metrics.summarize(results)["slower_than_inductor"] == ["beyond it"]


def test_rates_count_tasks_that_did_not_compile():
    results = [
        TaskResult("a", "fusion", compiled=True, correct=True, speedup_vs_eager=2.5,
                   speedup_vs_inductor=1.2, requests_total=2, requests_accepted=1,
                   compile_s=3.0, verify_s=1.0),
        TaskResult("b", "fusion", compiled=True, correct=False, requests_total=1, compile_s=2.0),
        TaskResult("c", "fusion", error="RuntimeError: no"),
        TaskResult("d", "fusion", compiled=True, correct=True, speedup_vs_eager=0.9,
                   speedup_vs_inductor=0.4, compile_s=1.0, verify_s=0.5),
    ]
    s = metrics.summarize(results)
    assert (s["tasks"], s["compiled"], s["correct"]) == (4, 3, 2)
    assert s["compiled_rate"] == pytest.approx(0.75)
    assert s["correct_rate"] == pytest.approx(0.5)
    assert s["fast_p"]["eager"] == pytest.approx({"fast_0": 0.5, "fast_1": 0.25, "fast_2": 0.25})
    assert s["fast_p"]["inductor"] == pytest.approx({"fast_0": 0.5, "fast_1": 0.25, "fast_2": 0.0})
    assert s["geomean_speedup"]["eager"] == pytest.approx(math.sqrt(2.5 * 0.9))
    assert s["geomean_speedup"]["inductor"] == pytest.approx(math.sqrt(1.2 * 0.4))
    assert s["requests"] == {"accepted": 1, "used": 0, "total": 3}
    assert s["compile_s"] == pytest.approx(6.0)
    assert s["verify_s"] == pytest.approx(1.5)


# Whole runs.

@pytest.fixture(scope="module")
def task_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tasks")
    for name, text in TASKS.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def test_finds_tasks_recursively_in_kernelbench_order(task_folder):
    assert [t.name for t in find_tasks(task_folder)] == [*GOOD, BROKEN]
    assert [t.name for t in find_tasks(task_folder, name_filter="level1", limit=1)] == GOOD[:1]
    with pytest.raises(DiceError, match="no KernelBench-format tasks matching 'nothing'"):
        find_tasks(task_folder, name_filter="nothing")


@pytest.fixture(scope="module")
def main_run(task_folder, tmp_path_factory):
    out = tmp_path_factory.mktemp("bench-results")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("DICE_BUILD_DIR", str(BUILD_DIR))
        status = main(["bench", "tasks", str(task_folder), *RUN_FLAGS, "--out", str(out),
                       "--no-progress"])
    assert status == 0
    return out


def test_eval_results_have_kernelbench_shape(main_run):
    results = json.loads((main_run / "eval_results.json").read_text())
    assert set(results) == {*GOOD, BROKEN}
    for samples in results.values():
        assert [s["granularity"] for s in samples] == ["function", "fusion"]
        assert [s["sample_id"] for s in samples] == [0, 1]
        for sample in samples:
            assert set(sample) == EVAL_KEYS
            assert sample["metadata"]["hardware"]


def test_correct_tasks_are_timed_against_both_baselines(main_run):
    results = json.loads((main_run / "eval_results.json").read_text())
    for name in GOOD:
        for sample in results[name]:
            assert sample["compiled"] and sample["correctness"], sample["metadata"]
            assert sample["metadata"]["correctness_trials"] == "(2 / 2)"
            assert sample["runtime"] == sample["dice_ms"] > 0
            assert sample["runtime_stats"]["num_trials"] == 3
            for baseline in ("eager", "inductor"):
                assert sample[f"speedup_vs_{baseline}"] == pytest.approx(
                    sample[f"{baseline}_ms"] / sample["dice_ms"])
            assert sample["requests"]["accepted"] <= sample["requests"]["total"]
            assert sample["compile_s"] >= 0
            assert sample["noise"] >= 0
            assert sample["slower_than_inductor"] == (
                sample["dice_ms"] > sample["inductor_ms"] * (1 + sample["noise"]))


def test_a_task_that_raises_is_not_compiled_and_the_run_goes_on(main_run):
    results = json.loads((main_run / "eval_results.json").read_text())
    for sample in results[BROKEN]:
        assert not sample["compiled"] and not sample["correctness"]
        assert sample["runtime"] == -1.0 and sample["runtime_stats"] == {}
        assert sample["speedup_vs_eager"] is None
        assert "this task cannot run" in sample["metadata"]["compilation_error"]


def test_summary_agrees_with_the_results(main_run):
    results = json.loads((main_run / "eval_results.json").read_text())
    summary = json.loads((main_run / "summary.json").read_text())
    assert "CPU times" in summary["environment"]["timing"]
    assert summary["environment"]["torch"]
    for index, granularity in enumerate(["function", "fusion"]):
        s = summary["granularities"][granularity]
        samples = [results[name][index] for name in (*GOOD, BROKEN)]
        assert s["tasks"] == 3
        assert s["compiled_rate"] == pytest.approx(2 / 3)
        assert s["correct_rate"] == pytest.approx(2 / 3)
        for baseline in ("eager", "inductor"):
            speedups = [x[f"speedup_vs_{baseline}"] for x in samples]
            faster = sum(1 for v in speedups if v is not None and v > 1.0)
            assert s["fast_p"][baseline]["fast_0"] == pytest.approx(2 / 3)
            assert s["fast_p"][baseline]["fast_1"] == pytest.approx(faster / 3)
            assert s["geomean_speedup"][baseline] == pytest.approx(
                math.sqrt(speedups[0] * speedups[1]))


def test_markdown_and_plot(main_run):
    text = (main_run / "results.md").read_text()
    assert "CPU times" in text and "| function | 3 | 67% | 67% |" in text
    for name in (*GOOD, BROKEN):
        assert f"| {name} | fusion |" in text
    assert (main_run / "speedups.png").read_bytes().startswith(PNG_SIGNATURE)


def test_python_m_dice_bench_tasks(task_folder, tmp_path):
    out = tmp_path / "results"
    env = dict(os.environ, DICE_BUILD_DIR=str(BUILD_DIR),
               PYTHONPATH=str(SOURCE_ROOT / "python"))
    proc = subprocess.run(
        [sys.executable, "-m", "dice", "bench", "tasks", str(task_folder), *RUN_FLAGS,
         "--granularity", "fusion", "--out", str(out)],
        capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "| fusion | 3 | 67% | 67% |" in proc.stdout
    assert "3/3" in proc.stderr and BROKEN in proc.stderr  # the bar, with the task's name
    results = json.loads((out / "eval_results.json").read_text())
    assert [s["granularity"] for s in results[GOOD[0]]] == ["fusion"]
    assert (out / "speedups.png").read_bytes().startswith(PNG_SIGNATURE)


def test_bad_folder_is_one_line_and_status_1(tmp_path, capsys):
    assert main(["bench", "tasks", str(tmp_path / "missing"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.strip() == f"dice: error: {tmp_path / 'missing'}: no such folder"


def test_timed_forwards_take_turns_after_their_warm_ups():
    from dice.bench.timing import WARMUP_RUNS, time_forwards
    calls = []
    fns = [lambda name=name: calls.append(name) for name in ("dice", "inductor")]
    times = time_forwards(fns, [], 4, "cpu")
    assert [len(t) for t in times] == [4, 4]
    assert all(ms >= 0 for t in times for ms in t)
    assert calls == ["dice"] * WARMUP_RUNS + ["inductor"] * WARMUP_RUNS \
        + ["dice", "inductor"] * 4
