"""`dice curate prepare`: each pair's PyTorch program as the kernel request
its kernel must serve, on the machine where the compiler is.

The program is exported with torch-mlir and outlined at `function`
granularity, as `dice train prepare` does for task packs, so the verifier
later checks the kernel against the compiler's own reference program. A
pair is dropped here, with the reason, when its program does not export,
when it is not one kernel request (an op the compiler keeps outside
splits it), when its CUDA program has no entry point the verifier can
call, when it repeats an earlier pair, or when the verifier's static
analysis (Clang, which GPU machines here lack) finds it deceptive or
malformed: the dynamic checks follow on the GPU.
"""

import json
import subprocess
import sys
from pathlib import Path

from dice.curate.pairs import read_pairs, verifier_input
from dice.errors import DiceError, ToolFailed
from dice.jsonl import read_objects
from dice.tools import find_tool

PAIRS_FILE = "pairs.jsonl"   # under the work folder: one line per pair read


def prepared_line(pair, config=None):
    """The work-file object of one pair: what the GPU side needs to verify
    it, or `dropped` with `stage` and `reason`."""
    from dice.train.prepare import program_requests
    head = {"id": pair.id, "level": pair.level, "source": pair.source, "row": pair.row,
            "pytorch_code": pair.pytorch_code, "cuda_code": pair.cuda_code}
    try:
        kind, text = verifier_input(pair.cuda_code)
    except DiceError as e:
        return {**head, "stage": "prepare", "dropped": "no entry point", "reason": str(e)}
    try:
        found = program_requests(pair.pytorch_code, f"pair_{pair.id}", "function", config)
    except DiceError as e:
        return {**head, "stage": "prepare", "dropped": "not compilable", "reason": str(e)}
    if len(found) != 1:
        return {**head, "stage": "prepare", "dropped": "not one kernel request",
                "reason": f"the program makes {len(found)} kernel requests at function "
                          "granularity; a pair's kernel must compute all of it"}
    request = found[0]
    return {**head, "fingerprint": request["fingerprint"], "signature": request["signature"],
            "program": request["program"], "reference": request["python"], kind: text}


def batch_line(line):
    """The dice-verify --batch object of a prepared pair."""
    entry = {"name": line["id"], "fingerprint": line["fingerprint"],
             "signature": line["signature"], "program": line["program"]}
    for kind in ("candidate", "cuda_source"):
        if kind in line:
            entry[kind] = line[kind]
    return entry


def static_analysis(lines, work, log):
    """Runs dice-verify --analysis-only on the pairs not yet dropped and
    drops those it finds deceptive or malformed (stage `analysis`)."""
    ready = [line for line in lines if "dropped" not in line]
    if not ready:
        return
    batch = Path(work) / "analysis-batch.jsonl"
    batch.write_text("".join(json.dumps(batch_line(line)) + "\n" for line in ready))
    print(f"static analysis of {len(ready)} pair(s) ...", file=log, flush=True)
    proc = subprocess.run([str(find_tool("dice-verify")), "--batch", str(batch),
                           "--analysis-only", "--json"], capture_output=True, text=True)
    verdicts = [json.loads(text) for text in proc.stdout.splitlines() if text.strip()]
    if proc.returncode not in (0, 1) or len(verdicts) != len(ready):
        raise ToolFailed("dice-verify", proc.returncode, proc.stderr)
    batch.unlink()
    for line, verdict in zip(ready, verdicts):
        if verdict["status"] in ("deceptive", "compile_error"):
            line.update(stage="analysis", dropped=verdict["status"], reason=verdict["reason"])
            print(f"{line['id']}: dropped ({verdict['status']}): "
                  f"{verdict['reason'].splitlines()[0]}", file=log, flush=True)


def prepare(paths, work, fields=None, skip_bad=False, config=None, log=None):
    """Writes `work`/pairs.jsonl for the pairs of `paths`; returns (pairs
    read, pairs ready to verify, lines skipped)."""
    log = log or sys.stderr
    pairs, skipped = read_pairs(paths, fields, skip_bad, log)
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    seen, lines = {}, []
    for i, pair in enumerate(pairs, 1):
        key = (pair.pytorch_code, pair.cuda_code)
        if key in seen:
            line = {"id": pair.id, "level": pair.level, "source": pair.source,
                    "row": pair.row, "stage": "prepare", "dropped": "duplicate",
                    "reason": f"the same pair as {seen[key]}"}
        else:
            seen[key] = pair.id
            line = prepared_line(pair, config)
        outcome = f"dropped ({line['dropped']}): {line['reason'].splitlines()[0]}" \
            if "dropped" in line else f"request {line['fingerprint']}"
        print(f"[{i}/{len(pairs)}] {pair.id}: {outcome}", file=log, flush=True)
        lines.append(line)
    static_analysis(lines, work, log)
    ready = sum("dropped" not in line for line in lines)
    # Whole or not at all: the GPU side reads this file.
    tmp = work / (PAIRS_FILE + ".partial")
    tmp.write_text("".join(json.dumps(line) + "\n" for line in lines))
    tmp.replace(work / PAIRS_FILE)
    return len(pairs), ready, skipped


def read_work(work):
    """The pairs.jsonl objects of a work folder, in order."""
    return read_objects(Path(work) / PAIRS_FILE,
                        missing_hint="; run `dice curate prepare` first",
                        damaged_hint=": the file is damaged; prepare it again")
