"""The fault-injection suite on a GPU machine: every fault of the corpus
through one `dice-verify` run, between two batches of honest candidates.

The batch is honest candidates (before), every `fault_*.cu` of labels.json,
and the same honest candidates again under other fingerprints (after), all
with their reference programs, one sandboxed GPU worker taking them in
order. The last fault is one that kills its worker, so that both honest
batches begin with a worker start. The libraries are built first (a run
without programs builds and runs nothing), so the timed run only checks.

Written under --out: `faults.json`, `faults.md`, the verdicts
(`faults-gpu.jsonl`) and dice-verify's stderr with the second each line came
(`faults-verify.log`); the batches and the build's log stay in --cache. The
report holds:
  * each fault's verdict, reason and wall seconds (from the previous
    candidate's verdict to its own, so a replacement worker's start counts
    for the candidate after a crash), and whether it is right: the final
    verdict is the label's `dynamic` (`deceptive` wherever the static
    analysis of the development machine, --static: `dice-verify
    --analysis-only` over the corpus, flags the file), the GPU run's status
    is the label's `gpu` (else `dynamic` for what the analysis does not
    catch; a correct result for what only the analysis catches), and its
    reason holds the words GPU_REASONS gives;
  * dice-verify's exit status (1 is normal: not every candidate is
    accepted; a signal or any other status is a tool failure);
  * the worker pool's throughput (candidates/s) on the honest batch before
    and after the faults, and their verdicts;
  * what a fault left behind: the helper process of fault_fork_exec.cu,
    the file fault_write_outside_scratch.cu tries to write outside its
    scratch folder.

    fault_suite.py --build build-gpu --cache DIR --out DIR [--static corpus-static.jsonl]

`--cpu-run` dry-runs the script's plumbing on a machine without a GPU (the
verdicts are then the CPU run's, and most are reported wrong).

Exit status 0 iff every fault is right, the tool exited normally, every
honest candidate after the faults is judged correct and nothing was left
behind.
"""

import argparse
import json
import subprocess
import time
from pathlib import Path

from check_corpus_verdicts import CORRECT, corpus_entries, labels, read_verdicts
from process_watch import processes_with_argv, run_timed

TIMEOUT_S = 10
HONEST = ["honest_add.cu", "honest_relu_dispatch.cu", "honest_gelu_half.cu",
          "honest_row_sum.cu", "honest_softmax.cu", "honest_layernorm.cu",
          "honest_transpose.cu", "honest_template_helper.cu"]
CLOSING_FAULT = "fault_abort.cu"  # kills its worker: the batch after starts one
# Words the reason of the GPU run must hold, beside the status.
GPU_REASONS = {
    "fault_abort.cu": ["SIGABRT"],
    "fault_host_segfault.cu": ["SIGSEGV"],
    "fault_host_oob.cu": ["SIGSEGV"],
    "fault_stack_overflow.cu": ["SIGSEGV"],
    "fault_infinite_loop.cu": [f"did not finish within {TIMEOUT_S} s"],
    "fault_host_infinite_loop.cu": [f"did not finish within {TIMEOUT_S} s"],
    "fault_oob_write.cu": ["CUDA error"],
    "fault_trap.cu": ["CUDA error"],
    "fault_asm_trap.cu": ["CUDA error"],
    "fault_wrong_result.cu": ["differs from the reference"],
    "fault_throws_before_launch.cu": ["threw", "expects a 1-D tensor"],
    "fault_throw.cu": ["threw", "not a std::exception"],
    "fault_huge_host_alloc.cu": ["threw", "bad_alloc"],
    "fault_huge_device_alloc.cu": ["threw", "out of memory"],
    "fault_output_flood.cu": ["SIGXFSZ"],  # the sandbox's 1 GiB file-size limit
    "fault_write_outside_scratch.cu": ["threw", "Permission denied"],  # Landlock
    "fault_socket.cu": ["threw", "Permission denied"],  # the seccomp filter
}
SLEEPER = [b"sleep", b"613"]  # the helper fault_fork_exec.cu leaves running
ESCAPE = "dice-fault-escape.txt"  # fault_write_outside_scratch.cu, in ../../ of a scratch


def batch_rows():
    """(phase, name, batch line) in run order."""
    entries = {e["name"]: e for e in corpus_entries()}
    faults = [n for n, label in labels().items() if "fault" in label and n != CLOSING_FAULT]
    faults.append(CLOSING_FAULT)
    rows = []
    for phase, names in (("before", HONEST), ("fault", faults), ("after", HONEST)):
        for name in names:
            e = entries[name]
            rows.append((phase, name, {
                "name": f"{phase}:{name}", "fingerprint": f"{phase[0]}f{len(rows):014x}",
                "signature": e["declaration"], "cuda_source": e["source"],
                "program": e["program"]}))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", required=True)
    parser.add_argument("--cache", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--static")
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--cpu-run", action="store_true",
                        help="a dry run of this script without a GPU (dice-verify --cpu-run)")
    args = parser.parse_args()
    out, cache = Path(args.out), Path(args.cache)
    out.mkdir(parents=True, exist_ok=True)
    cache.mkdir(parents=True, exist_ok=True)
    dice_verify = str(Path(args.build) / "bin" / "dice-verify")
    config = cache / "faults.toml"
    config.write_text(f"[verifier]\ntimeout_s = {TIMEOUT_S}\n")
    static = {}
    if args.static:
        static = {n: v["status"] == "deceptive" for n, v in read_verdicts(args.static).items()}

    rows = batch_rows()
    batch = cache / "faults-batch.jsonl"
    batch.write_text("".join(json.dumps(r) + "\n" for _, _, r in rows))
    # Without programs every candidate is built and none runs.
    builds = cache / "faults-build.jsonl"
    builds.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "program"}) + "\n"
                              for _, _, r in rows))
    started = time.monotonic()
    build = subprocess.run([dice_verify, "--batch", str(builds), "--json", "--no-analysis",
                            "--jobs", str(args.jobs), "--cache", str(cache)],
                           capture_output=True, text=True, timeout=3000)
    (cache / "faults-build.log").write_text(build.stderr)
    unbuilt = [r["name"] for (_, _, r), line in zip(rows, build.stdout.splitlines())
               if json.loads(line)["status"] != "unverified"]
    print(f"built {len(rows)} candidates in {time.monotonic() - started:.0f} s "
          f"(dice-verify exit {build.returncode}; not built: {unbuilt or 'none'})", flush=True)

    (cache / ESCAPE).unlink(missing_ok=True)
    sleepers_before = processes_with_argv(SLEEPER)
    # A guard only: every check ends within the watchdog (plus a worker start).
    # Without the analysis (GPU machines have none; --static brings it in),
    # every candidate that builds goes to the worker.
    guard = 600 + len(rows) * (TIMEOUT_S + 120)
    rc, stdout, stderr, wall, killed = run_timed(
        [dice_verify, "--batch", str(batch), "--json", "--progress", "--no-analysis",
         "--workers", "1", "--jobs", str(args.jobs),
         "--cache", str(cache), "--config", str(config)] + (["--cpu-run"] if args.cpu_run else []),
        guard)
    (out / "faults-verify.log").write_text("".join(f"{t:10.3f} {l}\n" for t, l in stderr))
    (out / "faults-gpu.jsonl").write_text(stdout)
    sleepers = [p for p in processes_with_argv(SLEEPER) if p not in sleepers_before]
    escaped = (cache / ESCAPE).exists()

    verdicts = [json.loads(l) for l in stdout.splitlines() if l.startswith("{")]
    checked = [t for t, l in stderr if l.startswith("dice-verify: checked ")]
    built = [t for t, l in stderr if l.startswith("dice-verify: built ")]
    notes = [l[len("dice-verify: note: "):] for _, l in stderr if l.startswith("dice-verify: note: ")]
    # The worker takes the candidates that built, in order: the k-th
    # "checked" line is the k-th of them.
    ran = [k for k, v in enumerate(verdicts) if v["status"] != "compile_error"]
    checked_at = dict(zip(ran, checked))
    complete = len(verdicts) == len(rows) and len(checked) == len(ran) and built
    problems = []
    if killed:
        problems.append(f"dice-verify still ran after {guard:.0f} s and was killed")
    elif rc not in (0, 1):
        problems.append(f"dice-verify exited {rc}" + (" (a signal)" if rc < 0 else ""))
    if not complete:
        problems.append(f"{len(verdicts)} verdicts and {len(checked)} checks for {len(rows)} "
                        "candidates")

    results = []
    previous = built[-1] if built else 0.0
    for k, (phase, name, _) in enumerate(rows):
        v = verdicts[k] if k < len(verdicts) else {"status": "missing", "reason": ""}
        t = checked_at.get(k)
        row = {"phase": phase, "name": name, "status": v["status"],
               "reason": (v.get("reason") or "").splitlines()[0] if v.get("reason") else "",
               "speedup": v.get("speedup"),
               "wall_s": round(t - previous, 3) if t is not None else None}
        previous = t if t is not None else previous
        label = labels()[name]
        if phase == "fault":
            flagged = static.get(name, False)
            want_gpu = label.get("gpu", label["dynamic"] if not label["static"] else None)
            words = [w for w in GPU_REASONS.get(name, []) if w not in (v.get("reason") or "")]
            final = "deceptive" if flagged else v["status"]
            right = final == label["dynamic"] and not words
            if want_gpu is not None:
                right = right and v["status"] == want_gpu
            elif label["static"]:
                # Caught by the analysis only: the sandbox lets it run (a read,
                # the environment, a helper process) and the result is right.
                right = right and v["status"] in CORRECT
            row.update(label=label["dynamic"], gpu_label=want_gpu, static=flagged,
                       verdict=final, missing_words=words, right=right)
            if not right:
                problems.append(f"{name}: {v['status']} (final {final}, label {label['dynamic']}"
                                f"{', GPU alone ' + want_gpu if want_gpu else ''}), "
                                f"missing {words}")
        elif v["status"] not in CORRECT:
            problems.append(f"{phase} {name}: {v['status']}: {row['reason'][:200]}")
        results.append(row)

    def throughput(phase):
        """Candidates per second of `phase`, from the verdict before its first
        (or the end of the builds) to its last."""
        ks = [k for k, (p, _, _) in enumerate(rows) if p == phase]
        if not ks or any(k not in checked_at for k in ks):
            return None
        earlier = [checked_at[k] for k in checked_at if k < ks[0]]
        begin = max(earlier) if earlier else (built[-1] if built else 0.0)
        return round(len(ks) / (checked_at[ks[-1]] - begin), 3)

    summary = {"dice_verify_exit": rc, "wall_s": round(wall, 1), "timeout_s": TIMEOUT_S,
               "throughput_before": throughput("before"), "throughput_after": throughput("after"),
               "leftover_processes": sleepers, "wrote_outside_scratch": escaped,
               "sandbox_notes": [n for n in notes if n.startswith("worker sandbox")],
               "notes": notes, "problems": problems, "candidates": results}
    if sleepers:
        problems.append(f"fault_fork_exec.cu's helper outlived dice-verify: pids {sleepers}")
    if escaped:
        problems.append(f"fault_write_outside_scratch.cu wrote {cache / ESCAPE}")
    (out / "faults.json").write_text(json.dumps(summary, indent=1) + "\n")

    md = ["# Fault injection on the GPU worker", "",
          f"- dice-verify exit: {rc}" + (" (a signal)" if rc < 0 else " (no signal)")
          + f"; {len(verdicts)} verdicts for {len(rows)} candidates; {wall:.0f} s",
          f"- watchdog: timeout_s = {TIMEOUT_S}; one sandboxed GPU worker, candidates in order",
          f"- worker pool throughput on {len(HONEST)} honest candidates: "
          f"{summary['throughput_before']} candidates/s before the faults, "
          f"{summary['throughput_after']} after (same run; each batch starts with a worker start)",
          f"- left behind: helper processes {sleepers or 'none'}; file outside scratch: "
          f"{'yes' if escaped else 'none'}",
          f"- sandbox: {'; '.join(summary['sandbox_notes']) or 'every measure applied'}", "",
          "| phase | candidate | label (GPU alone) | static | GPU run | verdict | right | wall s | reason |",
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        if r["phase"] == "fault":
            label = r["label"] + (f" ({r['gpu_label']})" if r["gpu_label"] else "")
            md.append(f"| fault | {r['name']} | {label} | {'deceptive' if r['static'] else '-'} | "
                      f"{r['status']} | {r['verdict']} | {'yes' if r['right'] else 'NO'} | "
                      f"{r['wall_s']} | {r['reason'][:110]} |")
        else:
            speed = f"{r['speedup']:.2f}x" if r["speedup"] else ""
            md.append(f"| {r['phase']} | {r['name']} | accepted/slow | - | {r['status']} {speed} | "
                      f"{r['status']} | {'yes' if r['status'] in CORRECT else 'NO'} | "
                      f"{r['wall_s']} | {r['reason'][:110]} |")
    md += ["", f"{sum(r.get('right', False) for r in results)}/"
               f"{sum(r['phase'] == 'fault' for r in results)} faults right; "
               f"{len(problems)} problems" + ("" if not problems else ":"),
           *[f"- {p}" for p in problems]]
    (out / "faults.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
