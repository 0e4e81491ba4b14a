"""The `dice` command and the package's error behaviour: a user's own
program (KernelBench format, or a factory) compiles from the command line,
and every bad input is one clear line, never a traceback."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from build_tree import BUILD_DIR, SOURCE_ROOT
from dice.errors import ProgramError, ToolFailed, ToolNotFound
from dice.programs import load_program
from dice.tools import find_tool, run

FAKE_NVCC = SOURCE_ROOT / "test" / "Tools" / "dice-opt" / "Inputs" / "fake-nvcc.sh"

# The console script the set-up installs into the venv beside this Python.
DICE = Path(sys.executable).parent / "dice"

KERNELBENCH_FILE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, features, scale):
        super().__init__()
        self.proj = nn.Linear(features, features)
        self.scale = scale

    def forward(self, x, y):
        return torch.tanh(self.proj(x)) * self.scale + y

batch = 8

def get_init_inputs():
    return [32, 0.5]

def get_inputs():
    return [torch.randn(batch, 32), torch.randn(batch, 32)]
"""

FACTORY_FILE = """
import torch

class Scaled(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x).sum(dim=1)

def make():
    return Scaled(), (torch.randn(6, 10),)

def make_module_only():
    return Scaled()

def get_inputs():
    return [torch.randn(3, 5)]

def broken():
    raise ValueError("no weights here")
"""


def dice(*args, cwd=None, env=None):
    assert DICE.exists(), f"no {DICE}: the set-up installs the dice package (pip install -e .)"
    full_env = dict(os.environ, DICE_BUILD_DIR=str(BUILD_DIR), **(env or {}))
    return subprocess.run([str(DICE), *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=full_env, timeout=600)


def relative_error(stdout):
    match = re.search(r"max relative error ([0-9.e+-]+)", stdout)
    assert match, stdout
    return float(match.group(1))


@pytest.mark.shipped_model
def test_compile_a_kernelbench_file(tmp_path):
    program = tmp_path / "tanh_linear.py"
    program.write_text(KERNELBENCH_FILE)
    # One candidate a request: the engine is the point here, not how many.
    config = tmp_path / "dice.toml"
    config.write_text("[sampling]\ncandidates = 1\n")
    proc = dice("compile", program, "--nvcc", FAKE_NVCC, "--config", config, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "'tanh_linear': exported with torch-mlir" in proc.stdout
    found = re.search(r"(\d+) kernel requests", proc.stdout)
    assert found and int(found.group(1)) >= 1, proc.stdout
    assert relative_error(proc.stdout) < 1e-5
    # No engine named: the shipped model wrote a candidate for every
    # request, and without a GPU each keeps its original ops.
    assert "engine=model " in proc.stdout
    per_request = [l for l in proc.stdout.split("per request:\n", 1)[1].splitlines()
                   if l.strip()]
    assert len(per_request) == int(found.group(1)), proc.stdout
    assert all("no candidates" not in l and l.endswith("-> original ops")
               for l in per_request), proc.stdout
    # The dice.toml names no database: its default, .dice/kernels.db, from here.
    assert (tmp_path / ".dice" / "kernels.db").exists()


def test_engine_none_stops_after_the_requests(tmp_path):
    program = tmp_path / "tanh_linear.py"
    program.write_text(KERNELBENCH_FILE)
    proc = dice("compile", program, "--engine", "none")
    assert proc.returncode == 0, proc.stderr
    assert "engine 'none': no candidates" in proc.stdout
    assert "--dice-pipeline" not in proc.stdout


DATA_DEPENDENT = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        y = torch.relu(x) * 2.0
        return y, (y > 1.0).nonzero()

def get_inputs():
    return [torch.randn(8, 16)]
"""


def test_a_data_dependent_shape_stays_outside_and_the_rest_compiles(tmp_path):
    # nonzero's result has a size no input has: that op cannot be a request
    # or a plan step, and the function does not plan as a whole; the
    # requests around it are still formed and compiled.
    program = tmp_path / "nonzero.py"
    program.write_text(DATA_DEPENDENT)
    empty = tmp_path / "none.jsonl"
    empty.write_text("")
    proc = dice("compile", program, "--engine", f"replay:{empty}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    found = re.search(r"(\d+) kernel requests, (\d+) ops left outside", proc.stdout)
    assert found and int(found.group(1)) >= 1 and int(found.group(2)) >= 1, proc.stdout
    assert "dynamic dimension 0 of tensor<?xi64> is a size none of the inputs has" \
        in proc.stdout
    assert "reference programs not checked against PyTorch: the function does not plan " \
        "as a whole" in proc.stdout
    assert f"total: requests: {found.group(1)}" in proc.stdout


def test_compile_a_factory_in_a_file_and_in_a_module(tmp_path):
    (tmp_path / "user_models.py").write_text(FACTORY_FILE)
    for spec, cwd, env in [(tmp_path / "user_models.py", None, None),
                           ("user_models", tmp_path, {"PYTHONPATH": str(tmp_path)})]:
        proc = dice("compile", f"{spec}:make", "--engine", "none", cwd=cwd, env=env)
        assert proc.returncode == 0, proc.stderr
        assert relative_error(proc.stdout) < 1e-5
        assert "6x10 -> 6" in proc.stdout  # the factory's own inputs were used
    # A factory that returns only the module takes the file's get_inputs().
    proc = dice("compile", f"{tmp_path / 'user_models.py'}:make_module_only", "--engine", "none")
    assert proc.returncode == 0, proc.stderr
    assert "3x5 -> 3" in proc.stdout


@pytest.mark.parametrize("spec, message", [
    ("missing.py", "missing.py: no such file"),
    ("no_model.py", "no_model.py: defines no Model"),
    ("models.py:absent", "defines no callable 'absent'"),
    ("models.py:broken", "models.py:broken() raised ValueError: no weights here"),
    ("raises.py", "raises.py: importing it raised ZeroDivisionError"),
    ("not_a_module_xyz:make", "cannot import 'not_a_module_xyz'"),
])
def test_bad_programs_are_one_line_errors(tmp_path, spec, message):
    (tmp_path / "no_model.py").write_text("x = 1\n")
    (tmp_path / "models.py").write_text(FACTORY_FILE)
    (tmp_path / "raises.py").write_text("1 / 0\n")
    proc = dice("compile", spec, cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith("dice: error: "), proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_usage_errors(tmp_path):
    proc = dice("compile")
    assert proc.returncode == 1 and "name one program" in proc.stderr
    proc = dice("compile", "x.py", "--granularity", "huge")
    assert proc.returncode == 2 and "invalid choice: 'huge'" in proc.stderr


def test_library_code_raises_instead_of_exiting(tmp_path, monkeypatch):
    with pytest.raises(ProgramError, match="no such file"):
        load_program(tmp_path / "absent.py")
    monkeypatch.setenv("DICE_BUILD_DIR", str(tmp_path / "no-build"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolNotFound, match=r"no dice-opt at .*no-build/bin/dice-opt"):
        find_tool("dice-opt")
    with pytest.raises(ToolFailed, match=r"dice-opt exited with 1:\n<stdin>:1:1: error: custom op 'this'"):
        run([BUILD_DIR / "bin" / "dice-opt"], stdin="this is not MLIR\n")


def test_the_package_installs_with_pip(tmp_path):
    """`pip install <checkout>` into a fresh venv (which sees the project's
    torch) gives a `dice` command that finds the build, and the backend."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    # torch and torch-mlir come from the project's venv (a path line in a
    # .pth adds that folder, without the editable install's own finder).
    site = subprocess.run([venv / "bin" / "python", "-c", "import site; print(site.getsitepackages()[0])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "project-torch.pth").write_text(str(Path(torch.__file__).parents[1]) + "\n")
    # A copy of what the package is made of, so setuptools' build/ and
    # egg-info land there, not in the checkout (whose build/ is CMake's).
    checkout = tmp_path / "checkout"
    shutil.copytree(SOURCE_ROOT / "python", checkout / "python",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(SOURCE_ROOT / name, checkout / name)
    pip = subprocess.run([venv / "bin" / "python", "-m", "pip", "install", "-q",
                          "--disable-pip-version-check", "--no-deps", "--no-build-isolation",
                          checkout], capture_output=True, text=True, timeout=600)
    assert pip.returncode == 0, pip.stderr
    program = tmp_path / "prog.py"
    program.write_text(KERNELBENCH_FILE)
    proc = subprocess.run([venv / "bin" / "dice", "compile", program, "--engine", "none"],
                          capture_output=True,
                          text=True, env=dict(os.environ, DICE_BUILD_DIR=str(BUILD_DIR)),
                          cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert relative_error(proc.stdout) < 1e-5
    # The installed copy, not the checkout's sources, ran.
    where = subprocess.run([venv / "bin" / "python", "-c",
                            "import dice, sys; print(dice.__file__)"],
                           capture_output=True, text=True, cwd=tmp_path)
    assert str(venv) in where.stdout, where.stdout
    # The installed package's torch.compile backend, found by its entry point
    # in a program that never imports dice.
    user = tmp_path / "user.py"
    user.write_text(
        "import sys, torch\n"
        "m = torch.nn.Linear(4, 2).eval()\n"
        "x = torch.randn(3, 4)\n"
        "with torch.no_grad():\n"
        "    y = torch.compile(m, backend='dice', options={'fallback': 'eager'})(x)\n"
        "assert torch.allclose(y, m(x))\n"
        "print(sys.modules['dice.backend'].__file__)\n")
    backend = subprocess.run([venv / "bin" / "python", user], capture_output=True, text=True,
                             env=dict(os.environ, DICE_BUILD_DIR=str(BUILD_DIR)),
                             cwd=tmp_path, timeout=600)
    assert backend.returncode == 0, backend.stderr
    assert str(venv) in backend.stdout, backend.stdout
