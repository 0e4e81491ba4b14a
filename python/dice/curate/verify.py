"""`dice curate verify`: on a GPU machine, times each prepared pair's
program eagerly, then verifies every kernel with dice-verify against that
time: the nvcc build, the dynamic deception checks, the correctness trials
and the timing, all the compiler's own (the static analysis ran at
prepare). The verdicts go to `work`/verdicts.jsonl, one per pair that
reached the verifier.
"""

import json
import sys
from pathlib import Path

from dice.curate.measure import TIMES_FILE, measure
from dice.curate.prepare import batch_line, read_work
from dice.errors import DiceError, ToolFailed
from dice.tools import find_tool

VERDICTS_FILE = "verdicts.jsonl"
BATCH_FILE = "batch.jsonl"
CONFIG_FILE = "verify.toml"
DEFAULT_THRESHOLD = 2.0   # the CuKe rule: at least 2x over eager


def toml_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    raise DiceError(f"cannot write {value!r} to a dice.toml")


def write_verify_config(path, work, threshold, user_config=None):
    """The dice.toml dice-verify runs with: the user's [verifier] settings
    (tolerances, trials, timing runs), the measured eager baseline and the
    threshold. Other sections of the user's file mean nothing here and
    are left out."""
    import tomllib
    verifier = {}
    if user_config:
        try:
            verifier = dict(tomllib.loads(Path(user_config).read_text()).get("verifier", {}))
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise DiceError(f"{user_config}: {e}") from None
    for key in ("baseline", "baseline_times", "min_speedup"):
        if key in verifier:
            raise DiceError(f"{user_config}: verifier.{key} is dice-curate's to set "
                            "(the baseline is the pair's own program, the threshold is "
                            "--threshold)")
    verifier.update(baseline="measured_eager",
                    baseline_times=str((Path(work) / TIMES_FILE).resolve()),
                    min_speedup=threshold)
    Path(path).write_text("[verifier]\n" + "".join(
        f"{key} = {toml_value(value)}\n" for key, value in verifier.items()))


def verify(work, threshold=DEFAULT_THRESHOLD, runs=50, inductor=False, jobs=None,
           config=None, log=None):
    """Measures and verifies the pairs of `work`; returns the verdict
    objects written (`id` and `verdict` each)."""
    import subprocess
    log = log or sys.stderr
    if threshold <= 0:
        raise DiceError(f"--threshold must be positive, got {threshold}")
    work = Path(work)
    lines = read_work(work)
    ready = [line for line in lines if "dropped" not in line]
    # The verifier's config first: a bad --config fails before the timing.
    write_verify_config(work / CONFIG_FILE, work, threshold, config)
    measure(lines, work, runs, inductor, log)
    (work / BATCH_FILE).write_text("".join(json.dumps(batch_line(l)) + "\n" for l in ready))
    verdicts = []
    if ready:
        cmd = [str(find_tool("dice-verify")), "--batch", str(work / BATCH_FILE), "--json",
               "--config", str(work / CONFIG_FILE), "--progress"]
        if jobs:
            cmd += ["--jobs", str(jobs)]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=None, text=True)
        # Exit status 1 only says that not every candidate was accepted.
        if proc.returncode not in (0, 1):
            raise ToolFailed("dice-verify", proc.returncode, "see its messages above")
        outputs = [json.loads(text) for text in proc.stdout.splitlines() if text.strip()]
        if len(outputs) != len(ready):
            raise DiceError(f"dice-verify gave {len(outputs)} verdicts for {len(ready)} pairs")
        verdicts = [{"id": line["id"], "verdict": v} for line, v in zip(ready, outputs)]
    (work / VERDICTS_FILE).write_text("".join(json.dumps(v) + "\n" for v in verdicts))
    return verdicts
