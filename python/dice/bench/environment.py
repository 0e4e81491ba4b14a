"""What a benchmark result was measured on: the hardware by name, torch's
version and the commits of the dice checkout and of the tasks' folder."""

import os
import platform
import subprocess
from pathlib import Path

import torch

from dice.tools import SOURCE_ROOT


def cpu_name():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def hardware_name(device):
    device = torch.device(device)
    return torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_name()


def git_commit(folder):
    """HEAD of the git checkout holding `folder` ("-dirty" when it has
    uncommitted changes), or None outside one or without git."""
    def git(*args):
        return subprocess.run(["git", "-C", str(folder), *args], capture_output=True,
                              text=True, timeout=30)
    try:
        head = git("rev-parse", "HEAD")
        if head.returncode != 0:
            return None
        dirty = git("status", "--porcelain", "--untracked-files=no").stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return head.stdout.strip() + ("-dirty" if dirty else "")


def describe(device, tasks_folder):
    device = torch.device(device)
    return {
        "hardware": hardware_name(device),
        "device": str(device),
        "timing": ("CUDA events, L2 flushed before each run" if device.type == "cuda"
                   else "CPU wall clock (perf_counter): these are CPU times"),
        "torch": torch.__version__,
        # A copy of a checkout run elsewhere (a GPU machine) names its commit.
        "dice_commit": os.environ.get("DICE_COMMIT") or git_commit(SOURCE_ROOT),
        "tasks_commit": git_commit(tasks_folder),
    }
