"""The data engine's driver: draws programs from the grammar, writes the
kernel for each with the emitters and the compiler's scaffold for each with
`dice-scaffold-programs`, and splits them honestly.

Families: elementwise DAGs (dice.engine.elementwise), reductions
(dice.engine.reduction), normalizations (dice.engine.normalization),
matmuls (dice.engine.matmul), pools (dice.engine.pooling), convolutions
(dice.engine.convolution), data movement (dice.engine.layout: cat,
permute, slice, pad), scans (dice.engine.scan) and attention
(dice.engine.attention) with prologues and epilogues, each with its
emitter; and chains of their main ops, layer after layer
(dice.engine.chain), each a stage of its family's emitter.

Runs where the GPU node's tools are (Python and torch, the static
`dice-scaffold-programs`): no LLVM, no torch-mlir. Each program's printed
PyTorch form runs on the CPU twice, and a program whose result does not
tell the two inputs apart is dropped (dice.engine.degenerate). Work is cut
into chunks of `CHUNK` programs, each drawn from its own seeded generator,
so the corpus is the same for any number of jobs.

Splits, by construction:
- `heldout-primitives`: programs using a production of HELDOUT_PRIMITIVES,
  which no other split contains;
- `heldout-compositions`: programs combining two op classes of a pair in
  HELDOUT_PAIRS (each class alone is in training);
- `val`: a seeded 2% of the rest (by fingerprint);
- `train`: the rest.
A request (fingerprint) is kept once, in the first chunk that drew it.
"""

import hashlib
import json
import random
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch

from dice.corpus.cuda_common import hole
from dice.engine import (emit_attention, emit_chain, emit_conv, emit_elementwise, emit_layout,
                         emit_matmul, emit_pool, emit_scan, emit_stages)
from dice.engine.attention import KINDS as ATTENTIONS, MASKS, AttentionGrammar
from dice.engine.chain import ChainGrammar
from dice.engine.convolution import KINDS as CONVOLUTIONS, ConvolutionGrammar
from dice.engine.degenerate import degenerate_result
from dice.engine.elementwise import UNARY, Grammar
from dice.engine.layout import KINDS as MOVES, LayoutGrammar
from dice.engine.matmul import FORMS, MatmulGrammar
from dice.engine.normalization import NORMS, NormalizationGrammar
from dice.engine.pooling import KINDS, PoolingGrammar
from dice.engine.program import index_bounds, output_type
from dice.engine.reduction import LOSSES, REDUCTIONS, ReductionGrammar
from dice.engine.scan import KINDS as SCANS, ScanGrammar

CHUNK = 500
SPLITS = ("train", "val", "heldout-primitives", "heldout-compositions")
# logsumexp, not log_softmax: a cross entropy is a log-softmax, and it is in
# training.
HELDOUT_PRIMITIVES = ("mish", "softsign", "hardswish", "atan2", "amin", "argmin",
                      "logsumexp")
HELDOUT_PAIRS = (frozenset(("trig", "select")), frozenset(("rounding", "smooth")),
                 frozenset(("matmul", "trig")))
VAL_SHARE = 0.02
# The op class of each production that is not a unary function.
PRODUCTION_CLASS = {"add": "arith", "sub": "arith", "mul": "arith", "div": "arith",
                    "lerp": "arith", "maximum": "select", "minimum": "select",
                    "where": "select", "pow": "exponential", "atan2": "trig",
                    "cast": "cast", "broadcast_back": "arith",
                    **{r: "reduction" for r in REDUCTIONS},
                    **{loss: "loss" for loss in LOSSES},
                    **{n: "normalization" for n in NORMS},
                    **{f: "matmul" for f in FORMS},
                    **{k: "pooling" for k in KINDS},
                    **{k: "layout" for k in MOVES},
                    **{k: "convolution" for k in CONVOLUTIONS},
                    **{k: "scan" for k in SCANS}, "mask": "select", "exclusive": "arith",
                    "reversed": "layout", "ceil_mode": "pooling",
                    **{k: "attention" for k in ATTENTIONS}, "multi_head": "attention",
                    **{m: "select" for m in MASKS}}
# The classes of a family's main op (what is more than elementwise).
MAIN_OP_CLASSES = ("reduction", "loss", "normalization", "matmul", "pooling", "layout",
                   "convolution", "scan", "attention")


def emit_normalization(program, signature):
    """A norm that computes statistics takes the reduction emitter; batch
    norm in eval mode reads them, so it is one elementwise pass."""
    if all(op["fn"] in emit_elementwise.ELEMENTWISE for op in program["ops"]):
        return emit_elementwise.emit(program, signature)
    return emit_stages.emit(program, signature)


# The program families: their grammar, their emitter, and their share of draws.
FAMILIES = {"elementwise": (Grammar, emit_elementwise.emit, 0.17),
            "reduction": (ReductionGrammar, emit_stages.emit, 0.14),
            "normalization": (NormalizationGrammar, emit_normalization, 0.12),
            "matmul": (MatmulGrammar, emit_matmul.emit, 0.12),
            "pooling": (PoolingGrammar, emit_pool.emit, 0.08),
            "layout": (LayoutGrammar, emit_layout.emit, 0.08),
            "convolution": (ConvolutionGrammar, emit_conv.emit, 0.09),
            "scan": (ScanGrammar, emit_scan.emit, 0.04),
            "attention": (AttentionGrammar, emit_attention.emit, 0.04),
            "chain": (ChainGrammar, emit_chain.emit, 0.12)}


def class_of(production):
    return UNARY[production].cls if production in UNARY else PRODUCTION_CLASS[production]


def split_of(used, fingerprint):
    if any(p in HELDOUT_PRIMITIVES for p in used):
        return "heldout-primitives"
    classes = {class_of(p) for p in used}
    if any(pair <= classes for pair in HELDOUT_PAIRS):
        return "heldout-compositions"
    share = int(hashlib.sha256(fingerprint.encode()).hexdigest()[:8], 16) / 2 ** 32
    return "val" if share < VAL_SHARE else "train"


def data_dtype(program):
    """The dtype of the program's data: its first input that is not a mask
    (bool) or indices (int64); float32 where all are."""
    return next((i["dtype"] for i in program["inputs"] if i["dtype"] not in ("bool", "int64")),
                "float32")


def difficulty(program, used):
    """The curriculum's order, 1 (one op on one input) upward: productions,
    broadcast operands, half precision, casts and extra results each add,
    and each reduction, normalization, matmul, pool or other main op two
    more."""
    out_shape = output_type(program)["shape"]
    broadcast = sum(1 for i in program["inputs"] if i["shape"] != out_shape)
    half = data_dtype(program) != "float32"
    main_ops = sum(class_of(p) in MAIN_OP_CLASSES for p in used)
    return len([p for p in used if p != "cast"]) + broadcast + half + \
        ("cast" in used) + 2 * (len(program["outputs"]) - 1) + 2 * main_ops


def scaffold(programs, tool):
    """dice-scaffold-programs' output line for each program."""
    lines = "".join(json.dumps({"program": p}) + "\n" for p in programs)
    proc = subprocess.run([tool], input=lines, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"dice-scaffold-programs failed: {proc.stderr.strip()}")
    return [json.loads(line) for line in proc.stdout.splitlines()]


def chunk_rows(seed, chunk, count, tool, packs=False, exclude=()):
    """The rows of one chunk, `count` programs drawn from generator (seed,
    chunk), and how many of them were dropped as degenerate."""
    rng = random.Random(f"dice-engine/{seed}/{chunk}")
    grammars = {name: grammar(random.Random(rng.random()), exclude)
                for name, (grammar, _, _) in FAMILIES.items()}
    names, weights = zip(*((name, share) for name, (_, _, share) in FAMILIES.items()))
    families = rng.choices(names, weights, k=count)
    drawn = [grammars[family].draw() for family in families]
    rows = []
    dropped = 0
    scaffolds = scaffold([d[0] for d in drawn], tool)
    for n, (family, (program, used), s) in enumerate(zip(families, drawn, scaffolds)):
        if degenerate_result(s["reference"], index_bounds(s["program"])) is not None:
            dropped += 1
            continue
        middle = hole(FAMILIES[family][1](program, s["signature"]))
        productions = [p for p in used if p != "cast"]
        rows.append({
            "id": f"{family}-{seed}-{chunk}-{n}", "level": 1 if len(productions) == 1 else 2,
            "pytorch_code": s["reference"],
            "cuda_code": s["prefix"] + middle + s["suffix"],
            "prefix": s["prefix"], "middle": middle, "suffix": s["suffix"],
            "reference": s["reference"], "signature": s["signature"],
            "fingerprint": s["fingerprint"], "program": s["program"],
            **({"infill_prompt": s["infill_prompt"], "end_to_end_prompt": s["end_to_end_prompt"]}
               if packs else {}),
            "family": family, "productions": used,
            "classes": sorted({class_of(p) for p in used}),
            "dtype": data_dtype(program),
            "rank": len(output_type(program)["shape"]),
            "difficulty": difficulty(program, used),
            "split": split_of(used, s["fingerprint"])})
    return rows, dropped


SFT_FIELDS = ("id", "level", "pytorch_code", "cuda_code", "prefix", "middle", "suffix",
              "reference", "signature", "fingerprint", "program", "family", "productions",
              "classes", "dtype", "rank", "difficulty")
PACK_FIELDS = ("id", "level", "pytorch_code", "fingerprint", "signature", "program",
               "reference", "prefix", "suffix", "infill_prompt", "end_to_end_prompt",
               "difficulty")


def generate(out_dir, count, seed=0, jobs=1, tool="dice-scaffold-programs", packs=False,
             log=None):
    """Writes corpus-<split>.jsonl (SFT rows, easiest first), with --packs
    packs-<split>.jsonl (RL task packs), and summary.json to out_dir.
    Returns the summary."""
    log = log or sys.stderr
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    rows = {split: [] for split in SPLITS}
    seen = set()
    drawn = 0
    degenerate = 0
    chunk = 0
    with ProcessPoolExecutor(max_workers=jobs, initializer=torch.set_num_threads,
                             initargs=(1,)) as pool:  # a chunk a core
        while len(seen) < count:
            need = count - len(seen)
            chunks = max(1, min(jobs * 4, -(-need * 11 // 10 // CHUNK)))
            futures = [pool.submit(chunk_rows, seed, chunk + k, CHUNK, tool, packs)
                       for k in range(chunks)]
            chunk += chunks
            for future in futures:
                kept, dropped = future.result()
                degenerate += dropped
                for row in kept:
                    if len(seen) >= count:
                        break
                    drawn += 1
                    if row["fingerprint"] in seen:
                        continue
                    seen.add(row["fingerprint"])
                    rows[row.pop("split")].append(row)
                elapsed = time.monotonic() - started
                print(f"[{len(seen)}/{count}] distinct requests from {drawn} drawn "
                      f"({degenerate} degenerate dropped), {elapsed:.0f} s", file=log, flush=True)
    summary = {"count": len(seen), "drawn": drawn, "degenerate": degenerate, "seed": seed,
               "seconds": round(time.monotonic() - started, 1), "splits": {}}
    for split, items in rows.items():
        items.sort(key=lambda r: (r["difficulty"], r["id"]))  # the curriculum's order
        with open(out_dir / f"corpus-{split}.jsonl", "w") as f:
            for row in items:
                f.write(json.dumps({k: row[k] for k in SFT_FIELDS}) + "\n")
        if packs:
            with open(out_dir / f"packs-{split}.jsonl", "w") as f:
                for row in items:
                    f.write(json.dumps({k: row[k] for k in PACK_FIELDS}) + "\n")
        summary["splits"][split] = {
            "rows": len(items),
            "dtype": dict(Counter(r["dtype"] for r in items)),
            "rank": dict(sorted(Counter(r["rank"] for r in items).items())),
            "difficulty": dict(sorted(Counter(r["difficulty"] for r in items).items())),
            "productions": dict(Counter(p for r in items for p in r["productions"])
                                .most_common())}
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary
