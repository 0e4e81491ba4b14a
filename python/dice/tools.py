"""Where the package finds the C++ tools and how it runs them.

Looked for, in order: `$DICE_BUILD_DIR/bin` (a build tree named by the
user), the `build/` of the checkout this package was installed from (an
editable install, or `python/` on `sys.path`), and the `PATH`.
"""

import os
import shutil
import subprocess
from pathlib import Path

from dice.errors import ToolFailed, ToolNotFound

SOURCE_ROOT = Path(__file__).resolve().parents[2]


def build_dir():
    """The build tree dice uses: `$DICE_BUILD_DIR`, else the checkout's."""
    return Path(os.environ.get("DICE_BUILD_DIR", SOURCE_ROOT / "build"))


def find_tool(name):
    """The path of C++ tool `name`; raises ToolNotFound saying where it looked."""
    places = []
    if "DICE_BUILD_DIR" in os.environ:
        places.append(Path(os.environ["DICE_BUILD_DIR"]) / "bin" / name)
    else:
        places.append(SOURCE_ROOT / "build" / "bin" / name)
    for path in places:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    on_path = shutil.which(name)
    if on_path:
        return Path(on_path)
    raise ToolNotFound(f"no {name} at {places[0]} or on PATH; build the project "
                       "(bash scripts/setup.sh) or set DICE_BUILD_DIR to a build tree")


def run(cmd, stdin=None, cwd=None, check=True):
    """Runs a tool; with `check`, a nonzero exit raises ToolFailed."""
    proc = subprocess.run([str(c) for c in cmd], input=stdin, capture_output=True,
                          text=True, cwd=cwd)
    if check and proc.returncode != 0:
        raise ToolFailed(Path(str(cmd[0])).name, proc.returncode, proc.stderr)
    return proc
