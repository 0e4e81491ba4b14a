"""Runs a command and fails unless it exits with the given status.

usage: exit-status.py STATUS COMMAND [ARG...]

lit's `not` accepts any non-zero status; the tools' usage errors have a
documented one.
"""
import subprocess
import sys

want, command = int(sys.argv[1]), sys.argv[2:]
got = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
if got != want:
    sys.exit(f"{command[0]}: exit status {got}, expected {want}")
