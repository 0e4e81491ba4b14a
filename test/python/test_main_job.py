"""`python -m dice compile` (the README's main job) without a GPU: the whole
pipeline on the convnet example with its replay file of candidate kernels.
The stand-in nvcc of the lit tests "builds" every candidate, so the test
takes seconds: each honest kernel ends `unverified` (said once: no CUDA
device), the deceptive one `deceptive`, and every request falls back.
"""

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


def test_compile_prints_report_and_outcomes(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(SOURCE_ROOT / "python"),
               DICE_BUILD_DIR=str(BUILD_DIR), DICE_EXAMPLE_CACHE=str(tmp_path / "builds"))
    proc = subprocess.run([sys.executable, "-m", "dice", "compile", "--example", "convnet",
                           "--nvcc", str(FAKE_NVCC)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "reference programs vs PyTorch on fresh inputs: max relative error" in out
    error = float(out.split("max relative error ")[1].split()[0])
    assert error < 1e-5
    report = out.split("--dice-report=-\n", 1)[1]
    assert report.split("\n", 2)[1].split()[:2] == ["fingerprint", "level"]
    notes = [l for l in out.splitlines() if l.startswith("verifier: ")]
    assert notes == ["verifier: no CUDA device: candidates are analysed and built, not run"], out
    lines = [l for l in out.split("per request:\n", 1)[1].splitlines() if l.strip()]
    assert len(lines) == 5, lines
    deceptive = [l for l in lines if "deceptive" in l]
    assert len(deceptive) == 1 and "torch_compute" in deceptive[0], lines
    assert "matmul add " in deceptive[0]
    assert sum("unverified: built and analysed, not run" in l for l in lines) == 4, lines
    assert all(l.endswith("-> original ops") for l in lines), lines
