"""Time to a verdict: dice-verify against a KernelBench-style load_inline flow.

Both verify the same honest corpus kernels on the same machine in one run.
The load_inline flow is what KernelBench's harness does per candidate: a fresh
Python process builds the source with `torch.utils.cpp_extension.load_inline`
(its own build directory, so nothing is reused), checks 5 trials against the
PyTorch reference and times 100 runs with CUDA events. dice-verify gets each
candidate with a cold build cache (the light tensor header, the bridge library
and the worker are part of the installation, as torch's libraries are part of
the other flow's).

Measured: seconds from start to verdict per candidate, one at a time (median),
and the throughput of all candidates at once with every core building
(load_inline: one process per candidate; dice-verify: one batch with --jobs).

With --corpus-batch N, dice-verify also verifies N kernels of the training
corpus in one batch, the size of a reinforcement-learning step, and reports
candidates per second (the throughput the trainer sees).

    python bench/verify_vs_load_inline.py --build build-gpu --json out.json \
        [--corpus-batch 64] [--workers N] [--also-workers N ...] [--dice-only]
"""

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "test" / "gpu"))

from check_corpus_verdicts import corpus_entries  # noqa: E402

# What the load_inline flow runs in its own process: build, 5 correctness
# trials, 100 timed runs. Printed JSON is its verdict.
LOAD_INLINE_FLOW = r'''
import json, sys, time, torch
from torch.utils.cpp_extension import load_inline
spec = json.loads(sys.argv[1])
start = time.time()
try:
    module = load_inline(name=spec["name"], cpp_sources=spec["declaration"],
                         cuda_sources=spec["source"], functions=["dice_forward"],
                         build_directory=spec["build"], extra_cuda_cflags=["-O3"],
                         verbose=False)
except Exception as error:
    print(json.dumps({"status": "compile_error", "seconds": time.time() - start,
                      "error": str(error)[-1500:]}))
    sys.exit(0)
compiled = time.time() - start
dtype = getattr(torch, spec["dtype"])
correct = True
for trial in range(5):
    torch.manual_seed(trial)
    xs = [torch.randn(shape, device="cuda", dtype=dtype) for shape in spec["inputs"]]
    want = eval(spec["computes"], {"torch": torch}, {f"x{i}": x for i, x in enumerate(xs)})
    got = module.dice_forward(*xs)
    want = list(want) if isinstance(want, tuple) else [want]
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    tol = 1e-2 if dtype in (torch.float16, torch.bfloat16) else 1e-4
    correct &= len(got) == len(want) and all(
        g.shape == w.shape and torch.allclose(g.float(), w.float(), atol=tol, rtol=tol)
        for g, w in zip(got, want))
times = []
for _ in range(3):
    module.dice_forward(*xs)
for _ in range(100):
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record(); module.dice_forward(*xs); end.record()
    torch.cuda.synchronize()
    times.append(begin.elapsed_time(end))
print(json.dumps({"status": "correct" if correct else "incorrect",
                  "compile_seconds": compiled, "kernel_ms": sorted(times)[50],
                  "seconds": time.time() - start}))
'''


def corpus_batch(count, seed=0):
    """`count` rows of the training corpus as dice-verify candidates: the
    honest kernels, reference programs and signatures dice-train verifies,
    each its own request, drawn with a fixed seed."""
    rows = [json.loads(line) for line in (ROOT / "train" / "data" / "corpus-train.jsonl").open()]
    random.Random(seed).shuffle(rows)
    out = []
    for row in rows[:count]:
        source = row["cuda_code"].split('source = """\n', 1)[1].split('"""', 1)[0]
        out.append({"name": row["id"], "fingerprint": row["fingerprint"],
                    "declaration": row["signature"], "source": source,
                    "program": json.dumps(row["program"])})
    return out


def honest_candidates():
    return [{**c, **c["label"]} for c in corpus_entries() if c["name"].startswith("honest_")]


# dice-verify compiles every candidate with what a load_inline build has in
# scope plus the CUDA stream and guard headers (lib/Verifier/Build/prologue); the
# load_inline flow gets the same two includes, so both accept the same text.
LOAD_INLINE_PROLOGUE = "#include <ATen/cuda/CUDAContext.h>\n#include <c10/cuda/CUDAGuard.h>\n"


def run_load_inline(python, candidate, scratch):
    build = Path(tempfile.mkdtemp(dir=scratch))
    spec = {"name": "cand_" + build.name.replace("-", "_"), "declaration": candidate["declaration"],
            "source": LOAD_INLINE_PROLOGUE + candidate["source"], "build": str(build), "inputs": candidate["inputs"],
            "dtype": candidate["dtype"], "computes": candidate["computes"]}
    start = time.time()
    proc = subprocess.run([python, "-c", LOAD_INLINE_FLOW, json.dumps(spec)],
                          capture_output=True, text=True)
    wall = time.time() - start
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    verdict = json.loads(lines[-1]) if lines else {"status": "error", "stderr": proc.stderr[-2000:]}
    verdict["wall_seconds"] = wall
    return verdict


def run_dice_verify(build_dir, candidates, scratch, jobs, workers=0, **verifier):
    """Verifies `candidates` in one dice-verify run; `verifier` holds keys of
    dice.toml's [verifier] section to set (build_group=1, ...)."""
    cache = Path(tempfile.mkdtemp(dir=scratch))
    config = []
    if verifier:
        (cache / "dice.toml").write_text(
            "[verifier]\n" + "".join(f"{k} = {v}\n" for k, v in verifier.items()))
        config = ["--config", str(cache / "dice.toml")]
    batch = cache / "batch.jsonl"
    with batch.open("w") as f:
        for i, c in enumerate(candidates):
            f.write(json.dumps({"name": c["name"],
                                "fingerprint": c.get("fingerprint", f"bench{i:04d}{os.getpid()}"),
                                "signature": c["declaration"], "cuda_source": c["source"],
                                "program": c["program"]}) + "\n")
    start = time.time()
    proc = subprocess.run([str(Path(build_dir) / "bin" / "dice-verify"), "--batch", str(batch),
                           "--jobs", str(jobs), "--cache", str(cache), "--json", "--timings"]
                          + (["--workers", str(workers)] if workers else []) + config,
                          capture_output=True, text=True)
    wall = time.time() - start
    verdicts = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    timings = [json.loads(line.split("timings: ", 1)[1]) for line in proc.stderr.splitlines()
               if line.startswith("dice-verify: timings: ")]
    return wall, verdicts, proc.stderr[-3000:], timings


def phase_summary(timings):
    """Per check phase: the worker seconds summed over a batch, and the part
    of them spent waiting for the device lock."""
    summary = {}
    for t in timings:
        for phase, ms in t.get("phase_ms", {}).items():
            entry = summary.setdefault(phase, {"seconds": 0.0, "lock_wait_seconds": 0.0})
            entry["seconds"] += ms / 1e3
            entry["lock_wait_seconds"] += t.get("lock_wait_ms", {}).get(phase, 0.0) / 1e3
    return summary


def print_phase_summary(summary):
    for phase, entry in sorted(summary.items(), key=lambda kv: -kv[1]["seconds"]):
        print(f"    {phase:20s} {entry['seconds']:6.2f} s of worker time, "
              f"{entry['lock_wait_seconds']:6.2f} s of it waiting for the device lock", flush=True)


def verify_corpus_batch(args, batch, scratch, cores, **verifier):
    """One dice-verify run over the corpus batch: wall time, verdicts and
    the per-phase summary."""
    wall, verdicts, _, timings = run_dice_verify(args.build, batch, scratch, cores,
                                                 args.workers, **verifier)
    statuses = [v["status"] for v in verdicts]
    return {"wall_seconds": wall, "candidates_per_second": len(batch) / wall,
            "statuses": {s: statuses.count(s) for s in sorted(set(statuses))},
            "phases": phase_summary(timings), "timings": timings}, statuses


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--sequential", type=int, default=4,
                        help="candidates timed one at a time by the load_inline flow")
    parser.add_argument("--cold", type=int, default=0, metavar="N",
                        help="time the cold one-shot verdict on the first N honest kernels "
                             "(default: all of them)")
    parser.add_argument("--json", help="write the results here (rewritten after every stage, "
                                       "so a run cut short keeps what it measured)")
    parser.add_argument("--workers", type=int, default=0,
                        help="GPU workers for the batch (default: dice-verify's)")
    parser.add_argument("--corpus-batch", type=int, default=0, metavar="N",
                        help="also verify N training-corpus kernels in one batch (the size of an "
                             "RL step) and report candidates per second")
    parser.add_argument("--also-workers", type=int, nargs="*", default=[], metavar="N",
                        help="verify the corpus batch again with N GPU workers")
    parser.add_argument("--also-precision", type=float, nargs="*", default=[], metavar="P",
                        help="verify the corpus batch again with verifier.timing_precision = P "
                             "(0: every timed run)")
    parser.add_argument("--dice-only", action="store_true",
                        help="time dice-verify only (no load_inline flow, no ratios)")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    candidates = honest_candidates()
    scratch = Path(tempfile.mkdtemp(prefix="dice-bench-verify-"))
    results = {"cores": cores, "candidates": len(candidates)}

    def save():
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2) + "\n")

    # The stages run in the order of what the goals need: the batch
    # throughput, the cold verdict and its ratio to load_inline, then the
    # comparisons that explain them.
    batch = corpus_batch(args.corpus_batch) if args.corpus_batch else []
    if batch:
        results["corpus_batch"], statuses = verify_corpus_batch(args, batch, scratch, cores)
        results["corpus_batch"]["candidates"] = len(batch)
        print(f"dice-verify  {len(batch)} corpus kernels in one batch "
              f"{results['corpus_batch']['wall_seconds']:7.2f} s "
              f"({results['corpus_batch']['candidates_per_second']:.1f} candidates/s)", flush=True)
        print_phase_summary(results["corpus_batch"]["phases"])
        save()

    # One at a time: the time a user waits for one verdict.
    dice_one = []
    for c in candidates[: args.cold or len(candidates)]:
        wall, verdicts, log, phases = run_dice_verify(args.build, [c], scratch, 1)
        dice_one.append({"name": c["name"], "seconds": wall,
                         "status": verdicts[0]["status"] if verdicts else "error",
                         "compile_ms": verdicts[0].get("compile_ms") if verdicts else None,
                         "check_phase_ms": phases[0]["phase_ms"] if phases else None})
        print(f"dice-verify  {c['name']:32s} {wall:7.2f} s  {dice_one[-1]['status']}", flush=True)
    dice_median = statistics.median(r["seconds"] for r in dice_one)
    results["dice_verify"] = {"per_candidate": dice_one, "median_seconds": dice_median}
    save()
    li_one = []
    for c in candidates[: 0 if args.dice_only else args.sequential]:
        verdict = run_load_inline(args.python, c, scratch)
        li_one.append({"name": c["name"], **verdict})
        print(f"load_inline  {c['name']:32s} {verdict['wall_seconds']:7.2f} s  {verdict['status']}", flush=True)
    if li_one:
        li_median = statistics.median(r["wall_seconds"] for r in li_one)
        results["load_inline"] = {"per_candidate": li_one, "median_seconds": li_median}
        results["median_ratio"] = li_median / dice_median
        print(f"median seconds to a verdict: dice-verify {dice_median:.2f}, load_inline "
              f"{li_median:.2f} ({results['median_ratio']:.1f}x)", flush=True)
        save()

    # All at once, every core building.
    dice_all_wall, dice_all, log, dice_all_phases = run_dice_verify(
        args.build, candidates, scratch, cores, args.workers)
    print(f"dice-verify  all {len(candidates)} at once {dice_all_wall:7.2f} s", flush=True)
    results["dice_verify"].update({
        "batch_wall_seconds": dice_all_wall,
        "batch_statuses": [v["status"] for v in dice_all],
        "batch_compile_ms": [v.get("compile_ms") for v in dice_all],
        "batch_timings": dice_all_phases,
        "throughput_per_minute": 60 * len(candidates) / dice_all_wall})
    save()

    if batch:
        for precision in args.also_precision:
            other, p_statuses = verify_corpus_batch(args, batch, scratch, cores,
                                                    timing_precision=precision)
            other.update({"timing_precision": precision, "same_statuses": p_statuses == statuses})
            results.setdefault("corpus_batch_other_precision", []).append(other)
            print(f"dice-verify  the same {len(batch)} with timing_precision = {precision} "
                  f"{other['wall_seconds']:7.2f} s ({other['candidates_per_second']:.1f} "
                  f"candidates/s), same verdicts: {p_statuses == statuses}", flush=True)
            print_phase_summary(other["phases"])
            save()
        # The same batch with one nvcc run per candidate: what shared builds
        # (verifier.build_group) save, measured in this run.
        alone, alone_statuses = verify_corpus_batch(args, batch, scratch, cores, build_group=1)
        alone["same_statuses"] = alone_statuses == statuses
        results["corpus_batch_built_alone"] = alone
        results["shared_build_speedup"] = alone["wall_seconds"] / results["corpus_batch"]["wall_seconds"]
        print(f"dice-verify  the same {len(batch)}, each built alone {alone['wall_seconds']:7.2f} s "
              f"({alone['candidates_per_second']:.1f} candidates/s); shared builds "
              f"{results['shared_build_speedup']:.2f}x, same verdicts: {alone['same_statuses']}",
              flush=True)
        save()
        for workers in args.also_workers:
            more_wall, more_verdicts, _, more_timings = run_dice_verify(
                args.build, batch, scratch, cores, workers)
            more_statuses = [v["status"] for v in more_verdicts]
            results.setdefault("corpus_batch_other_workers", []).append({
                "workers": workers, "wall_seconds": more_wall,
                "candidates_per_second": len(batch) / more_wall,
                "same_statuses": more_statuses == statuses, "timings": more_timings})
            print(f"dice-verify  the same {len(batch)} with {workers} workers {more_wall:7.2f} s "
                  f"({len(batch) / more_wall:.1f} candidates/s)", flush=True)
            save()

    if not args.dice_only:
        start = time.time()
        with ThreadPoolExecutor(max_workers=cores) as pool:
            li_all = list(pool.map(lambda c: run_load_inline(args.python, c, scratch), candidates))
        li_all_wall = time.time() - start
        results.setdefault("load_inline", {}).update({
            "batch_wall_seconds": li_all_wall,
            "batch_statuses": [v["status"] for v in li_all],
            "throughput_per_minute": 60 * len(candidates) / li_all_wall})
        results["throughput_ratio"] = li_all_wall / dice_all_wall
        print(f"{len(candidates)} candidates on {cores} cores: dice-verify {dice_all_wall:.1f} s, "
              f"load_inline {li_all_wall:.1f} s ({results['throughput_ratio']:.1f}x)")
        save()
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
