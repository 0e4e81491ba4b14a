"""Checks a stratified sample of engine rows with dice-verify: the static
analysis and extraction (anywhere), or the whole verifier (`build`, on a
GPU machine), and reports per cell (emitter x dtype x shape class).

Every row must pass: `unverified` after the analysis alone; `accepted` or
`slow` with the GPU (correct and honest). Anything else is the engine's
bug, never the kernel's luck."""

import json
from collections import Counter, defaultdict
from pathlib import Path

from dice.corpus.check import verify
from dice.corpus.cuda_common import definition_head
from dice.engine.sample import cell_of, stratified
from dice.errors import DiceError

PASS_ANALYSIS = {"unverified"}
PASS_GPU = {"accepted", "slow"}


def read_rows(corpus_dir):
    rows = []
    for path in sorted(Path(corpus_dir).glob("corpus-*.jsonl")):
        with open(path) as f:
            rows.extend(json.loads(line) for line in f if line.strip())
    return rows


def declares_signature(row):
    """The answer defines `dice_forward` exactly as the request declares it."""
    return definition_head(row["signature"]) + " {" in row["middle"]


def check(corpus_dir, out_path, per_cell, total=None, build=False, jobs=2, seed=0,
          families=None):
    """(rows checked, rows failed); `families`: only rows of those."""
    rows = read_rows(corpus_dir)
    if families:
        unknown = set(families) - {r["family"] for r in rows}
        if unknown:
            raise DiceError(f"no rows of famil{'y' if len(unknown) == 1 else 'ies'} "
                             f"{', '.join(sorted(unknown))} in {corpus_dir}")
        rows = [r for r in rows if r["family"] in families]
    rows = stratified(rows, per_cell, seed=seed, total=total)
    verdicts = verify(rows, build=build, jobs=jobs)
    passing = PASS_GPU if build else PASS_ANALYSIS
    cells = defaultdict(Counter)
    with open(out_path, "w") as f:
        for row, verdict in zip(rows, verdicts):
            ok = verdict["status"] in passing and declares_signature(row)
            cell = " / ".join(cell_of(row))
            cells[cell][verdict["status"]] += 1
            cells[cell]["pass" if ok else "fail"] += 1
            f.write(json.dumps({"id": row["id"], "cell": cell, "ok": ok,
                                "declares_signature": declares_signature(row),
                                **{k: verdict.get(k) for k in
                                   ("status", "reason", "speedup", "kernel_ms",
                                    "baseline_ms", "gpu", "compile_ms")}}) + "\n")
    lines = ["| cell | rows | pass | verdicts |", "| --- | ---: | ---: | --- |"]
    for cell, counts in sorted(cells.items()):
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())
                             if k not in ("pass", "fail"))
        lines.append(f"| {cell} | {counts['pass'] + counts['fail']} | {counts['pass']} | "
                     f"{statuses} |")
    failed = sum(c["fail"] for c in cells.values())
    lines.append("")
    lines.append(f"{len(rows) - failed} of {len(rows)} rows pass "
                 f"{'the verifier on the GPU' if build else 'the static analysis'}.")
    Path(out_path).with_suffix(".md").write_text("\n".join(lines) + "\n")
    return len(rows), failed
