"""dice corpus engine-reach: a program's requests, each written by its
family's emitter or counted by its kind. The oracle for what is written is
the emitters themselves (a request counted as written is one the family's
emitter returns a kernel for); the kinds are the programs' own ops."""

import json
import os
import subprocess
import sys
import textwrap

from build_tree import BUILD_DIR, SOURCE_ROOT

PROGRAM = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(8, 16)
        self.up = nn.Linear(8, 16)

    def forward(self, x):
        return {body}


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return []
"""


def write(folder, name, body):
    (folder / f"{name}.py").write_text(textwrap.dedent(PROGRAM.format(body=body)))


def test_each_request_is_written_or_counted_by_its_kind(tmp_path):
    folder = tmp_path / "programs"
    folder.mkdir()
    write(folder, "gelu", "torch.nn.functional.gelu(x) * 2")
    write(folder, "swiglu", "torch.nn.functional.silu(self.gate(x)) * self.up(x)")
    write(folder, "topk", "self.gate(x).topk(3, -1).values")
    (folder / "notes.py").write_text("SIZES = [1, 2]\n")  # not a program: left out
    out = tmp_path / "reach.json"
    env = dict(os.environ, PYTHONPATH=str(SOURCE_ROOT / "python"), DICE_BUILD_DIR=str(BUILD_DIR))
    proc = subprocess.run([sys.executable, "-m", "dice", "corpus", "engine-reach", str(folder),
                           "--out", str(out)], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    by_file = {e["file"].rsplit("/", 1)[-1]: e for e in report["programs"]}
    assert set(by_file) == {"gelu.py", "swiglu.py", "topk.py"}
    (gelu,) = by_file["gelu.py"]["requests"]
    assert gelu["family"] == "elementwise" and gelu["kind"] == "elementwise"
    (swiglu,) = by_file["swiglu.py"]["requests"]
    # Two linears: the chain's stages write it (the matmul emitter takes one).
    assert swiglu["family"] == "chain" and swiglu["kind"] == "matmul x2"
    (topk,) = by_file["topk.py"]["requests"]
    kind = "arange, argsort, index, matmul, slice"
    assert topk["family"] is None and topk["kind"] == kind
    assert report["folders"][str(folder)] == {
        "programs": 3, "export_failed": 0, "requests": 3, "written": 2,
        "unwritten": {kind: 1}}
    assert "2 of 3 requests (67%)" in proc.stdout and kind in proc.stdout
