"""The shipped model (model/default/) behind `dice-opt --dice-pipeline` with
default settings: no model configured, no engine named.

On a CPU machine the pipeline still asks the model for every request; the
candidates are built but cannot run, so each request falls back and every
function leaves exactly as it came in (the output is the plain round trip).
The shipped model's generation_config.json asks for sampling (8 candidates
a request); the sampler's seed is fixed, so every run gives the same
candidates.
"""

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest
import torch
from safetensors import safe_open

from build_tree import BUILD_DIR, SOURCE_ROOT

DICE_OPT = BUILD_DIR / "bin" / "dice-opt"
DEFAULT_MODEL = SOURCE_ROOT / "model" / "default"
# A reduction (softmax, whose run the seed test reuses) and a dynamic-shape
# program with matmuls: decoding 8 candidates a request on the CPU is this
# file's time (the other exports cost up to 5 minutes each here), and what
# the test checks (the shipped model is found, asked, its candidates stored,
# every function left as it came) does not depend on which ops a request
# holds; the round trip of every export is test_torch_mlir_exports'.
INPUTS = [SOURCE_ROOT / "test" / "Inputs" / "torch-mlir" / f"{name}.mlir"
          for name in ("softmax", "dynamic_mlp")]
PLUGIN = BUILD_DIR / "lib" / "libDiceModelPlugin.so"

pytestmark = [pytest.mark.skipif(not PLUGIN.exists(),
                                 reason="built without the model runtime"),
              pytest.mark.shipped_model]


def dice_opt(*args, cwd):
    return subprocess.run([str(DICE_OPT), *map(str, args)], capture_output=True, text=True,
                          timeout=900, cwd=cwd)


def test_the_default_model_is_small_enough_to_ship_and_loads_in_transformers():
    weights = DEFAULT_MODEL / "model.safetensors"
    assert weights.stat().st_size <= 20 * 2**20
    config = json.loads((DEFAULT_MODEL / "config.json").read_text())
    assert config["block_size"] == 4 and config["model_type"] == "sdar"
    # An independent reader: transformers' Qwen3 takes the weights as they are.
    from transformers import Qwen3Config, Qwen3ForCausalLM
    hf = Qwen3ForCausalLM(Qwen3Config(**{k: v for k, v in config.items()
                                         if k not in ("architectures", "model_type")}))
    with safe_open(str(weights), "pt") as f:
        state = {k: f.get_tensor(k).float() for k in f.keys()}
    missing, unexpected = hf.load_state_dict(state, strict=False)
    assert not unexpected
    assert set(missing) <= {"lm_head.weight"}  # tied to the embeddings


def compiled(path, workdir, db):
    return dice_opt(path, f"--dice-db={db}", "--dice-pipeline", "--dice-report=-",
                    "-mlir-print-op-on-diagnostic=false", cwd=workdir)


@pytest.fixture(scope="module")
def default_compile(tmp_path_factory):
    """Each input compiled once with default settings, in a folder of its own:
    decoding 8 candidates a request on the CPU is most of this file's time,
    and the seed test reuses a run instead of decoding it again."""
    runs = {}

    def compile_once(path):
        if path not in runs:
            workdir = tmp_path_factory.mktemp(path.stem)
            runs[path] = (workdir, compiled(path, workdir, workdir / "kernels.db"))
        return runs[path]
    return compile_once


@pytest.mark.parametrize("path", INPUTS, ids=[p.stem for p in INPUTS])
def test_default_settings_run_to_the_end_and_leave_each_function_as_it_came(
        path, default_compile):
    if torch.cuda.is_available():
        pytest.skip("with a GPU, candidates run and may be accepted")
    workdir, run = default_compile(path)
    plain = dice_opt(path, cwd=workdir)
    assert plain.returncode == 0, plain.stderr
    assert run.returncode == 0, run.stderr
    assert "engine 'model'" not in run.stderr
    assert run.stdout.endswith(plain.stdout), "without a GPU the output is the plain round trip"
    report = run.stdout[:-len(plain.stdout)]
    assert "kernels used: 0" in report
    if "requests: 0" not in report:
        # The shipped model was loaded and asked: its candidates are stored.
        with sqlite3.connect(workdir / "kernels.db") as c:
            models = {m for (m,) in c.execute("SELECT model_id FROM candidates")}
        assert models == {"dice:default"}


def test_a_fixed_seed_gives_the_same_candidates_on_every_run(default_compile, tmp_path):
    softmax = SOURCE_ROOT / "test" / "Inputs" / "torch-mlir" / "softmax.mlir"
    first_dir, first = default_compile(softmax)
    again = compiled(softmax, tmp_path, tmp_path / "kernels.db")  # another process
    stored = []
    for workdir, run in [(first_dir, first), (tmp_path, again)]:
        assert run.returncode == 0, run.stderr
        with sqlite3.connect(workdir / "kernels.db") as c:
            rows = c.execute("SELECT model_id, source FROM candidates ORDER BY source").fetchall()
        stored.append(rows)
    assert stored[0], "the model wrote candidates"
    assert all(model == "dice:default" for model, _ in stored[0])
    assert stored[0] == stored[1]
