"""Where the tests find the source tree and the build: $DICE_SOURCE_DIR and
$DICE_BUILD_DIR (ctest sets both), else this checkout and its build/."""

import os
import subprocess
from pathlib import Path

SOURCE_ROOT = Path(os.environ.get("DICE_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BUILD_DIR = Path(os.environ.get("DICE_BUILD_DIR", SOURCE_ROOT / "build"))
BIN = BUILD_DIR / "bin"


def tool(name, *args, stdin=None):
    """The stdout of a built tool, which must succeed."""
    path = BIN / name
    assert path.exists(), f"no {name} at {path} (set DICE_BUILD_DIR)"
    proc = subprocess.run([str(path), *map(str, args)], input=stdin,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{name} {' '.join(map(str, args))} failed:\n{proc.stderr}"
    return proc.stdout
