"""Checks corpus rows with dice-verify: the static deception analysis for
every row, and nvcc builds for a sample (one row per family), since a
build takes tens of seconds."""

import json
import tempfile
from pathlib import Path

from dice.errors import DiceError
from dice.pipeline import find_tool, run


def verify_batch_line(row):
    """A dice-verify --batch object for a row: the hole as a model answer."""
    return {"name": row["id"], "fingerprint": row["fingerprint"],
            "signature": row["signature"], "program": row["program"],
            "candidate": f"```python\n{row['middle']}\n```\n"}


def one_per_family(rows):
    chosen = {}
    for row in rows:
        chosen.setdefault(row["family"], row)
    return list(chosen.values())


def verify(rows, build=False, jobs=2, cache=None, timeout_s=600):
    """Verdict dicts (dice-verify --json), one per row, in row order."""
    with tempfile.TemporaryDirectory(prefix="dice-corpus-check-") as tmp:
        batch = Path(tmp) / "batch.jsonl"
        batch.write_text("".join(json.dumps(verify_batch_line(r)) + "\n" for r in rows))
        cmd = [find_tool("dice-verify"), f"--batch={batch}", "--json", f"--jobs={jobs}",
               f"--timeout={timeout_s}"]
        cmd.append(f"--cache={cache}" if cache else f"--cache={Path(tmp) / 'cache'}")
        if not build:
            cmd.append("--analysis-only")
        proc = run(cmd, check=False)
    verdicts = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if len(verdicts) != len(rows):
        raise DiceError(f"dice-verify gave {len(verdicts)} verdicts for {len(rows)} rows:\n"
                           f"{proc.stderr}")
    return verdicts


# What a verdict says when the check passed: analysis-only runs stop at
# `unverified`; builds without a GPU are `unverified` too, with compile_ms.
PASSED = ("unverified", "accepted", "slow")
