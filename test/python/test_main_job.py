"""`python -m dice compile` (the README's main job) without a GPU: the whole
pipeline on the convnet example, with the shipped model's candidates (the
default) and with the example's hand-written kernels (`--engine replay`).
The stand-in nvcc of the lit tests "builds" every candidate, so nothing
waits on nvcc: with the hand-written kernels each honest one ends
`unverified` (said once: no CUDA device), the deceptive one `deceptive`,
and every request falls back; the model's candidates end wherever the
verifier puts them, and every request falls back too.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from build_tree import BUILD_DIR, SOURCE_ROOT

FAKE_NVCC = SOURCE_ROOT / "test" / "Tools" / "dice-opt" / "Inputs" / "fake-nvcc.sh"

pytestmark = [
    pytest.mark.skipif(not (BUILD_DIR / "bin" / "dice-opt").exists(), reason="no dice-opt"),
    pytest.mark.skipif(Path("/proc/driver/nvidia/version").exists(),
                       reason="with a GPU the candidates would run"),
]


def main_job(tmp_path, *args):
    env = dict(os.environ, PYTHONPATH=str(SOURCE_ROOT / "python"),
               DICE_BUILD_DIR=str(BUILD_DIR), DICE_EXAMPLE_CACHE=str(tmp_path / "builds"))
    proc = subprocess.run([sys.executable, "-m", "dice", "compile", "--example", "convnet",
                           "--nvcc", str(FAKE_NVCC), *args],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def request_lines(out):
    return [l for l in out.split("per request:\n", 1)[1].splitlines() if l.strip()]


@pytest.mark.shipped_model
def test_the_default_is_the_shipped_models_candidates(tmp_path):
    out = main_job(tmp_path)
    assert 'engine=model ' in out
    lines = request_lines(out)
    assert len(lines) == 5, lines
    # Every request got the model's candidate, judged, and kept its ops.
    assert not any("no candidates" in l for l in lines), lines
    assert all(l.endswith("-> original ops") for l in lines), lines
    # What the report counts is what the model wrote: the shipped model asks
    # for sampling (its generation_config.json), so each request gets
    # [sampling] candidates' default of 8.
    generation = json.loads((SOURCE_ROOT / "model" / "default" /
                             "generation_config.json").read_text())
    assert generation["do_sample"] is True
    total = [l for l in out.splitlines() if l.strip().startswith("total: ")]
    assert total and "candidates: 40," in total[0] and "kernels used: 0" in total[0], total


def test_compile_prints_report_and_outcomes(tmp_path):
    out = main_job(tmp_path, "--engine", "replay")
    assert "reference programs vs PyTorch on fresh inputs: max relative error" in out
    error = float(out.split("max relative error ")[1].split()[0])
    assert error < 1e-5
    report = out.split("--dice-report=-\n", 1)[1]
    assert report.split("\n", 2)[1].split()[:2] == ["fingerprint", "level"]
    notes = [l for l in out.splitlines() if l.startswith("verifier: ")]
    assert notes == ["verifier: no CUDA device: candidates are analysed and built, not run"], out
    lines = request_lines(out)
    assert len(lines) == 5, lines
    deceptive = [l for l in lines if "deceptive" in l]
    assert len(deceptive) == 1 and "torch_compute" in deceptive[0], lines
    assert "matmul add " in deceptive[0]
    assert sum("unverified: built and analysed, not run" in l for l in lines) == 4, lines
    assert all(l.endswith("-> original ops") for l in lines), lines
