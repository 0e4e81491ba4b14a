"""Turns the catalogue into corpus rows, RL tasks and task packs, split
into train / val / heldout, and writes them.

Every task goes through the compiler (export, outline at `function`
granularity, scaffold), so the solution's `dice_forward` has exactly the
signature the verifier will call, and prefix/suffix are the scaffold's."""

import json
import random
import sys
from pathlib import Path

from dice.corpus.catalogue import HELDOUT, catalogue
from dice.corpus.cuda_common import hole
from dice.errors import DiceError
from dice.train.prepare import pack_lines, program_requests

SPLITS = ("train", "val", "heldout")
VAL_SHARE = 0.1


def corpus_row(row_id, spec, request):
    middle = hole(spec.solve(request["signature"]))
    return {"id": row_id, "pytorch_code": spec.pytorch_code,
            "cuda_code": request["prefix"] + middle + request["suffix"],
            "level": spec.level, "prefix": request["prefix"], "middle": middle,
            "suffix": request["suffix"], "family": spec.family,
            "fingerprint": request["fingerprint"], "signature": request["signature"],
            "program": request["program"], "reference": request["python"]}


def split_of(spec, rng):
    if spec.family in HELDOUT:
        return "heldout"
    return "val" if rng.random() < VAL_SHARE else "train"


def generate(out_dir, seed=0, limit=None, variants=8, log=None):
    """Writes corpus-<split>.jsonl, tasks-<split>.jsonl and packs-<split>.jsonl
    to out_dir; returns {split: rows}. A task the compiler rejects is an
    error: the catalogue must only hold programs it can take."""
    log = log or sys.stderr
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed + 1)
    specs = list(catalogue(seed, variants))[:limit]
    rows = {split: [] for split in SPLITS}
    tasks = {split: [] for split in SPLITS}
    packs = {split: [] for split in SPLITS}
    seen = set()
    counts = {}
    for i, spec in enumerate(specs, 1):
        counts[spec.family] = counts.get(spec.family, 0) + 1
        row_id = f"{spec.family}-{counts[spec.family]:03d}"
        try:
            found = program_requests(spec.pytorch_code, row_id)
        except DiceError as e:
            raise DiceError(f"catalogue task {row_id}: {e}\n{spec.pytorch_code}") from e
        if len(found) != 1:
            raise DiceError(f"catalogue task {row_id}: {len(found)} kernel requests, expected 1")
        request = found[0]
        if request["fingerprint"] in seen:
            print(f"[{i}/{len(specs)}] {row_id}: same request as an earlier task, left out",
                  file=log, flush=True)
            continue
        seen.add(request["fingerprint"])
        split = split_of(spec, rng)
        rows[split].append(corpus_row(row_id, spec, request))
        task = {"id": row_id, "level": spec.level, "pytorch_code": spec.pytorch_code}
        tasks[split].append(task)
        packs[split].extend(pack_lines(task, found))
        print(f"[{i}/{len(specs)}] {row_id} -> {split} ({request['signature']})",
              file=log, flush=True)
    for split in SPLITS:
        write_jsonl(out_dir / f"corpus-{split}.jsonl", rows[split])
        write_jsonl(out_dir / f"tasks-{split}.jsonl", tasks[split])
        write_jsonl(out_dir / f"packs-{split}.jsonl", packs[split])
    return rows


def write_jsonl(path, objects):
    Path(path).write_text("".join(json.dumps(o) + "\n" for o in objects))


def read_jsonl(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
