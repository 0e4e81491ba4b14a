"""The embedded model behind `dice-opt --dice-pipeline`: dice-opt opens the
model runtime (libDiceModelPlugin.so) only when a compile asks for the
model, decodes candidates with it, and the rest of the pipeline treats them
as it treats any others.

The checkpoint is a tiny random one with a byte-level vocabulary, so its
answers are noise: every request must fall back, and the output must be the
plain round trip of the input.
"""

import os
import sqlite3
import subprocess

from build_tree import BUILD_DIR, SOURCE_ROOT
from dice.tiny_checkpoint import write_tiny_checkpoint
from test_model_numerics import write_byte_tokenizer

DICE_OPT = BUILD_DIR / "bin" / "dice-opt"
MLP = SOURCE_ROOT / "test" / "Inputs" / "torch-mlir" / "mlp.mlir"


def dice_opt(*args, env=None):
    return subprocess.run([str(DICE_OPT), *map(str, args)], capture_output=True,
                          text=True, timeout=600, env=env)


def test_dice_opt_does_not_load_libtorch_at_start():
    linked = subprocess.run(["ldd", str(DICE_OPT)], capture_output=True, text=True,
                            check=True).stdout
    assert "libtorch" not in linked and "libc10" not in linked


def test_model_candidates_go_through_the_pipeline(tmp_path):
    ckpt = tmp_path / "ckpt"
    config = write_tiny_checkpoint(ckpt, dtype="float32", seed=4)
    write_byte_tokenizer(ckpt, config)
    (tmp_path / "dice.toml").write_text(
        "[sampling]\nmax_tokens = 8\ncandidates = 2\ntop_k = 0\n"
        f"[artifacts]\ndir = \"{tmp_path / 'artifacts'}\"\n")
    plain = dice_opt(MLP)
    assert plain.returncode == 0, plain.stderr

    db = tmp_path / "kernels.db"
    run = dice_opt(MLP, f"--dice-config={tmp_path / 'dice.toml'}", f"--dice-db={db}",
                   f"--dice-pipeline=engine=model:{ckpt} granularity=fusion",
                   "--dice-report=-", "-mlir-print-op-on-diagnostic=false")
    assert run.returncode == 0, run.stderr
    # The report, then the IR, which must be the plain round trip.
    assert run.stdout.endswith(plain.stdout), "the fallback must be the plain round trip"
    report = run.stdout[:-len(plain.stdout)].splitlines()
    assert report[0].startswith("fingerprint")
    assert len(report) == 4 and all("fallback: all candidates" in r for r in report[1:3])
    assert report[-1] == ("total: requests: 2, candidates: 4, kernels used: 0, "
                          "fallbacks: 2 (all failed: 2)"), run.stdout
    assert run.stderr.count("falling back to the original ops: all candidates") == 2

    # Both requests' candidates are stored, under the model's id.
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT model_id, status FROM candidates").fetchall()
    assert len(rows) == 4
    assert all(model.startswith("dice:") for model, _ in rows)

    # A second compile is served by the database: the model is not opened.
    again = dice_opt(MLP, f"--dice-config={tmp_path / 'dice.toml'}", f"--dice-db={db}",
                     f"--dice-pipeline=engine=model:{ckpt} granularity=fusion",
                     env={**os.environ, "DICE_MODEL_PLUGIN": str(tmp_path / "absent.so")})
    assert again.returncode == 0, again.stderr
    assert again.stdout == plain.stdout


def test_a_missing_model_runtime_is_a_diagnostic(tmp_path):
    (tmp_path / "not-a-library.so").write_text("not an ELF file\n")
    for plugin, why in [(tmp_path / "absent.so", "the model runtime is not installed"),
                        (tmp_path / "not-a-library.so", "cannot open the model runtime")]:
        run = dice_opt(MLP, f"--dice-db={tmp_path / 'k.db'}",
                       f"--dice-pipeline=engine=model:{tmp_path}",
                       env={**os.environ, "DICE_MODEL_PLUGIN": str(plugin)})
        assert run.returncode != 0
        assert f"cannot load the DICE model at '{tmp_path}': {why}" in run.stderr
        assert "Stack dump" not in run.stderr


def test_an_adapter_over_its_base_goes_through_the_pipeline(tmp_path):
    """dice.toml's `model = { base, adapter }`: dice-opt merges the adapter
    into the base, its candidates are the adapted model's (greedy: not the
    base's), stored under the id Python's model_id spells."""
    from test_model_adapter import peft_adapter
    from dice.pipeline import model_id
    ckpt = tmp_path / "base"
    config = write_tiny_checkpoint(ckpt, dtype="float32", seed=4)
    write_byte_tokenizer(ckpt, config)
    peft_adapter(ckpt, tmp_path / "adapter", seed=1)

    def candidates(model_keys, name):
        toml = tmp_path / f"{name}.toml"
        toml.write_text(model_keys + "[sampling]\nmax_tokens = 8\ncandidates = 1\ntop_k = 1\n"
                        f"[artifacts]\ndir = \"{tmp_path / 'artifacts'}\"\n")
        db = tmp_path / f"{name}.db"
        run = dice_opt(MLP, f"--dice-config={toml}", f"--dice-db={db}",
                       "--dice-pipeline=engine=model granularity=fusion", "-o", os.devnull)
        assert run.returncode == 0, run.stderr
        with sqlite3.connect(db) as connection:
            return connection.execute(
                "SELECT model_id, source FROM candidates ORDER BY fingerprint").fetchall()

    keys = {"base": str(ckpt), "adapter": str(tmp_path / "adapter")}
    adapted = candidates(f'model = {{ base = "{ckpt}", adapter = "{tmp_path / "adapter"}" }}\n',
                         "adapted")
    plain = candidates(f'[model]\npath = "{ckpt}"\n', "plain")
    assert {m for m, _ in adapted} == {model_id("model", keys)} == {"dice:base+adapter"}
    assert {m for m, _ in plain} == {"dice:base"}
    assert [s for _, s in adapted] != [s for _, s in plain]

    # An adapter setting the runtime does not compute stops the compile,
    # naming the file and the key.
    settings = tmp_path / "adapter" / "adapter_config.json"
    settings.write_text(settings.read_text().replace('"use_dora": false', '"use_dora": true'))
    toml = tmp_path / "dora.toml"
    toml.write_text(f'model = {{ base = "{ckpt}", adapter = "{tmp_path / "adapter"}" }}\n')
    run = dice_opt(MLP, f"--dice-config={toml}", f"--dice-db={tmp_path / 'dora.db'}",
                   "--dice-pipeline=engine=model granularity=fusion", "-o", os.devnull)
    assert run.returncode != 0
    assert "adapter_config.json" in run.stderr and "use_dora" in run.stderr, run.stderr
