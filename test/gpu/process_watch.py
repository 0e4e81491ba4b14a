"""Running a tool under a watchdog, and finding processes it left behind.

Shared by the fault-injection suites: test/python/test_fault_injection.py
(the CPU side, in CI) and fault_suite.py (the GPU side).
"""
import subprocess
import threading
import time
from pathlib import Path


def run_timed(args, timeout):
    """Runs a tool, killed after `timeout` seconds. Returns its exit status
    (negative: the signal that ended it), its stdout, its stderr lines, each
    with the seconds since the start at which it came, the seconds it ran,
    and whether the watchdog had to kill it."""
    proc = subprocess.Popen([str(a) for a in args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    start = time.monotonic()
    watchdog = threading.Timer(timeout, proc.kill)
    watchdog.start()
    out = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()))
    reader.start()
    lines = [(time.monotonic() - start, line.rstrip("\n")) for line in proc.stderr]
    proc.wait()
    reader.join()
    killed = not watchdog.is_alive() and proc.returncode == -9
    watchdog.cancel()
    return proc.returncode, out[0], lines, time.monotonic() - start, killed


def processes_with_argv(argv):
    """The ids of running processes whose command line starts with `argv`
    (a list of bytes)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if cmdline.read_bytes().split(b"\0")[:len(argv)] == argv:
                found.append(int(cmdline.parent.name))
        except OSError:
            continue
    return found
