"""The committed torch-mlir exports (test/Inputs/torch-mlir) and MLIR 22.

(a) they are what test/torch_models/export.py produces today;
(b) MLIR 22 (dice-opt) parses each one and reprints it stably;
(c) sdpa_attention, which holds a tm_tensor op, is rejected cleanly.
"""

import os
import subprocess
import sys

import pytest

from build_tree import BUILD_DIR, SOURCE_ROOT

DICE_OPT = BUILD_DIR / "bin" / "dice-opt"
INPUTS = SOURCE_ROOT / "test" / "Inputs" / "torch-mlir"

sys.path.insert(0, str(SOURCE_ROOT / "test" / "torch_models"))
import export  # noqa: E402
import models  # noqa: E402

PARSEABLE = [n for n in models.MODELS if n not in models.EXPECTED_PARSE_FAILURES]
CRASH_MARKERS = ("Stack dump", "PLEASE submit a bug report")


def dice_opt(*args):
    assert DICE_OPT.exists(), f"no dice-opt at {DICE_OPT} (set DICE_BUILD_DIR)"
    return subprocess.run(
        [str(DICE_OPT), *map(str, args)], capture_output=True, text=True, timeout=60
    )


def test_exports_up_to_date():
    stale, report = export.stale_files(INPUTS)
    assert not stale, (
        "\n".join(report)
        + f"\nstale: {stale}; refresh with "
        "`python test/torch_models/export.py --out test/Inputs/torch-mlir`"
        + f" (pinned {export.PINNED}, installed {export.installed_versions()})"
    )


@pytest.mark.parametrize("name", PARSEABLE)
def test_export_round_trips(name, tmp_path):
    source = INPUTS / f"{name}.mlir"
    assert source.exists(), f"{source} is not committed"
    first, second = tmp_path / "a.mlir", tmp_path / "b.mlir"
    for src, dst in ((source, first), (first, second)):
        proc = dice_opt(src, "-o", dst)
        assert proc.returncode == 0, f"dice-opt {src} failed:\n{proc.stderr}"
    text = first.read_text()
    assert f"func.func @{name}(" in text
    assert first.read_bytes() == second.read_bytes(), "dice-opt output is not stable"


@pytest.mark.parametrize("name,dialect", sorted(models.EXPECTED_PARSE_FAILURES.items()))
def test_unknown_dialect_is_a_clean_error(name, dialect):
    source = INPUTS / f"{name}.mlir"
    assert source.exists(), f"{source} is not committed"
    assert f"{dialect}." in source.read_text(), f"{source} has no {dialect} op"
    proc = dice_opt(source, "-o", os.devnull)
    assert proc.returncode > 0, f"exit {proc.returncode}:\n{proc.stderr}"
    assert not any(m in proc.stderr for m in CRASH_MARKERS), proc.stderr
    assert "error:" in proc.stderr and dialect in proc.stderr, proc.stderr
