"""End-to-end test of --dice-pipeline with GPU verification, in four phases
(docs/end-to-end.md):

  prepare   (CPU, LLVM build)  export the model, write the replay candidates,
                               compile once (candidates stored `unverified`),
                               write the verification batch
  verify    (GPU)              test/gpu/run-pipeline-e2e.sh verify
  resolve   (CPU)              import the GPU verdicts and libraries, compile
                               twice (the second with the replay file gone),
                               write the lowered plan and its kernels
  run       (GPU)              test/gpu/run-pipeline-e2e.sh run: the lowered
                               plan through the kernel libraries vs PyTorch,
                               and as the torch.compile backend runs it (the
                               plan traced and compiled by Inductor, kernels
                               as torch.ops.dice calls), profiled and timed
                               against eager and Inductor

The verify phase also times each request's partition as Inductor compiles
it (`baseline`, dice/backend/baseline.py) and verifies the batch a second
time against those times (`verifier.baseline = "inductor"`), for the report
only: the labels are judged against the eager baseline.

Two cases (`--case`, given to prepare and remembered for the later phases):
`block` (the default) replays hand-written candidates of every kind and
checks each verdict; `convnet` is the README's main job, the convnet
example compiled with the shipped model's candidates (`engine=model`),
and needs at least one request to get a model-written kernel that is
accepted and called in the lowered program.

State the CPU phases keep is under .dice/pipeline-e2e/<case>/; what the GPU
phases need is under .dice/pipeline-e2e/<case>/gpu/ (carry it to the GPU
machine).
"""

import argparse
import hashlib
import json
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

from dice.examples import SmallConvNet  # noqa: E402
from dice.pipeline import (compile_pipeline, find_tool, model_id, op_names,  # noqa: E402
                           plan_of, read_report, report_table, requests, run,
                           write_config, write_replay)

E2E = ROOT / ".dice" / "pipeline-e2e"
# Set by main() from the case: this case's state, and what the GPU needs.
WORK = GPU = None
KERNELS = Path(__file__).resolve().parent / "pipeline_e2e_kernels"
# Kernels the convnet example replays too: one copy, there.
EXAMPLE_KERNELS = ROOT / "python" / "dice" / "example_kernels" / "convnet"
REPLAY_NAME = "block-replay.jsonl"

# The torch ops of a request (dice.pipeline.op_names) -> its candidates, as
# (kind, file). Kinds: honest (expected correct: accepted, or slow where
# the PyTorch function it replaces is faster), wrong (incorrect), slow,
# deceptive. Every request has at least one, so a warm database answers all.
CANDIDATES = {
    "layer_norm": [("honest", "layernorm.cu")],
    "matmul add maximum": [("deceptive", "linear_relu_torch.cu"),
                           ("honest", "linear_relu.cu")],
    "matmul add gelu add": [("wrong", "linear_gelu_wrong.cu"),
                            ("honest", "linear_gelu_residual.cu")],
    "matmul add": [("slow", "linear_slow.cu")],
    "softmax": [("honest", EXAMPLE_KERNELS / "row_softmax.cu")],
}
EXPECTED_STATUS = {"honest": {"accepted", "slow"}, "wrong": {"incorrect"}, "slow": {"slow"},
                   "deceptive": {"deceptive"}}
# The convnet case: requests that must get an accepted model-written kernel.
# (Two with the model trained on decomposed prompts, whose softmax kernels
# beat the five-op decomposition; the softmax now has to be a correct
# torch.softmax replacement that beats it, and the retrained model's are not
# correct: test/gpu/results/pipeline-e2e-convnet-h200.md.)
MIN_MODEL_KERNELS = 1


class Block(nn.Module):
    """LayerNorm, linear + relu, linear + GELU + residual, a linear head and
    a softmax: five requests at fusion granularity."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(128)
        self.fc1 = nn.Linear(128, 256)
        self.fc2 = nn.Linear(256, 128)
        self.head = nn.Linear(128, 64)

    def forward(self, x):
        h = torch.relu(self.fc1(self.norm(x)))
        h = nn.functional.gelu(self.fc2(h)) + x
        return torch.softmax(self.head(h), dim=-1)


@dataclass(frozen=True)
class Case:
    name: str
    model: type          # the nn.Module, built with no arguments
    input_shape: tuple
    engine: str          # "replay" (CANDIDATES) or "model" (the shipped model)

    @property
    def model_id(self):
        """What the kernel database files this case's candidates under."""
        return f"replay:{REPLAY_NAME}" if self.engine == "replay" else model_id("model")


CASES = {"block": Case("block", Block, (32, 128), "replay"),
         "convnet": Case("convnet", SmallConvNet, (2, 3, 8, 8), "model")}


def set_case(name):
    global WORK, GPU
    WORK = E2E / name
    GPU = WORK / "gpu"
    return CASES[name]


def case_of_work():
    """The case `prepare` wrote down for the later phases."""
    if not (GPU / "case.txt").exists():
        fail(f"no {GPU.relative_to(ROOT)}/case.txt: run prepare first (and carry its gpu/ "
             "folder to the GPU machine)")
    return (GPU / "case.txt").read_text().strip()


def sha256(text):
    return hashlib.sha256(text.encode()).hexdigest()


def fail(message):
    sys.exit(f"FAIL: {message}")


def pipeline(engine, output, jobs):
    """The report's table (lines) and every candidate the run resolved, each
    with its request's fingerprint."""
    proc = compile_pipeline(WORK / "program.mlir", WORK / "dice.toml", engine,
                            WORK / "lowered", WORK / "report.json", jobs=jobs, output=output)
    resolved = read_report(WORK / "report.json")["requests"]
    return report_table(proc), [{**c, "fingerprint": r["fingerprint"]}
                                for r in resolved for c in r["candidates"]]


def replay_labels(found):
    """The block case: each request's hand-written candidates (replay file
    entries) and their labels."""
    entries, labels = [], []
    for request in found:
        key = " ".join(op_names(request["program"]))
        if key not in CANDIDATES:
            fail(f"no candidates for a request of: {key} (update CANDIDATES)")
        for kind, name in CANDIDATES[key]:
            source = (KERNELS / name).read_text()
            entries.append((request["fingerprint"], source))
            labels.append({"fingerprint": request["fingerprint"], "kind": kind,
                           "file": Path(name).name,
                           "candidate_hash": sha256(source), "ops": key})
    return entries, labels


def prepare(args, case):
    from dice.torch_mlir_import import export_linalg_on_tensors
    if WORK.exists():
        shutil.rmtree(WORK)
    GPU.mkdir(parents=True)
    (GPU / "case.txt").write_text(case.name + "\n")
    torch.manual_seed(0)
    model = case.model().eval()
    example = torch.randn(*case.input_shape)
    (WORK / "program.mlir").write_text(export_linalg_on_tensors(model, (example,),
                                                                func_name=case.name))
    torch.manual_seed(1)
    inputs = [torch.randn(*case.input_shape)]
    torch.save({"state_dict": model.state_dict(), "inputs": inputs}, GPU / "model.pt")

    found, _ = requests(WORK / "program.mlir")
    if len(found) < 5:
        fail(f"only {len(found)} requests")
    write_config(WORK / "dice.toml", WORK / "kernels.db", WORK / "builds")
    if case.engine == "replay":
        entries, labels = replay_labels(found)
        write_replay(WORK / REPLAY_NAME, entries)
        engine = f"replay:{WORK / REPLAY_NAME}"
    else:
        engine = "model"
    report, stored = pipeline(engine, WORK / "cold.mlir", args.jobs)
    print("\n".join(report))

    # What still needs a GPU: every candidate the CPU left unverified.
    # Deceptive ones keep the static analysis' verdict (the GPU half is built
    # without Clang and has no static analysis).
    by_fp = {r["fingerprint"]: r for r in found}
    if case.engine == "model":
        # The model's candidates: what it wrote is only known now.
        labels = [{"fingerprint": c["fingerprint"], "kind": "model", "file": "-",
                   "candidate_hash": c["candidate_hash"],
                   "ops": " ".join(op_names(by_fp[c["fingerprint"]]["program"]))}
                  for c in stored]
        if not labels:
            fail("the model wrote no candidate")
    batch = []
    for c in stored:
        if c["status"] != "unverified":
            continue
        request = by_fp[c["fingerprint"]]
        batch.append({"name": c["candidate_hash"][:12], "fingerprint": c["fingerprint"],
                      "signature": request["signature"], "cuda_source": c["source"],
                      "program": request["program"]})
    (GPU / "batch.jsonl").write_text("".join(json.dumps(b) + "\n" for b in batch))
    # What the Inductor baseline times: each request's reference program.
    (GPU / "partitions.json").write_text(json.dumps(
        [{"fingerprint": r["fingerprint"], "program": r["program"], "python": r["python"]}
         for r in found], indent=1) + "\n")
    (GPU / "labels.json").write_text(json.dumps(labels, indent=1) + "\n")
    statuses = {c["candidate_hash"]: c["status"] for c in stored}
    for label in labels:
        if label["kind"] == "model":
            continue  # a model's text may fail any CPU check
        status = statuses.get(label["candidate_hash"])
        want = "deceptive" if label["kind"] == "deceptive" else "unverified"
        if status != want:
            fail(f"{label['file']}: {status} on the CPU, expected {want}")
    print(f"prepare: {len(found)} requests, {len(labels)} candidates, "
          f"{len(batch)} to verify on the GPU -> {GPU.relative_to(ROOT)}/batch.jsonl")


def resolve(args, case):
    gpu_dir = Path(args.gpu).resolve()
    libs = WORK / "gpu-libs"
    if libs.exists():
        shutil.rmtree(libs)
    libs.mkdir(parents=True)
    with tarfile.open(gpu_dir / "libs.tar") as archive:
        # The "data" filter (no links out, no devices) where this Python has it.
        if hasattr(tarfile, "data_filter"):
            archive.extractall(libs, filter="data")
        else:
            archive.extractall(libs)
    batch = {sha256(json.loads(line)["cuda_source"]): json.loads(line)
             for line in (GPU / "batch.jsonl").read_text().splitlines() if line.strip()}
    verdicts = [json.loads(line) for line in (gpu_dir / "verdicts.jsonl").read_text().splitlines()
                if line.strip()]
    if len(verdicts) != len(batch):
        fail(f"{len(verdicts)} verdicts for {len(batch)} candidates")
    records = []
    for verdict in verdicts:
        entry = batch.get(verdict["candidate_hash"])
        if entry is None:
            fail(f"verdict of an unknown candidate {verdict['candidate_hash']}")
        record = {"fingerprint": entry["fingerprint"], "model": case.model_id,
                  "source": entry["cuda_source"], "verdict": verdict}
        library = libs / "libs" / f"{verdict['candidate_hash']}.so"
        if library.exists():
            record["artifact"] = str(library)
        elif verdict["status"] == "accepted":
            fail(f"accepted candidate {verdict['candidate_hash'][:12]} has no library")
        records.append(record)
    (WORK / "gpu-verdicts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    print(run([find_tool("dice-db"), "import", WORK / "kernels.db",
               WORK / "gpu-verdicts.jsonl"]).stdout.strip())

    # The first compile: every request is a database hit with its GPU verdict.
    if (WORK / "lowered").exists():
        shutil.rmtree(WORK / "lowered")
    if case.engine == "replay":
        replay = WORK / REPLAY_NAME
        stash = WORK / (REPLAY_NAME + ".away")
        if stash.exists() and not replay.exists():
            stash.rename(replay)
        report, resolved = pipeline(f"replay:{replay}", WORK / "lowered.mlir", args.jobs)
        # The second: the replay file is gone, so any engine call would fail.
        replay.rename(stash)
        try:
            again, _ = pipeline(f"replay:{replay}", WORK / "again.mlir", args.jobs)
        finally:
            stash.rename(replay)
    else:
        report, resolved = pipeline("model", WORK / "lowered.mlir", args.jobs)
        # The second: a model folder of the same name that does not exist (the
        # same database key), so any engine call would fail.
        with tempfile.TemporaryDirectory() as empty:
            again, _ = pipeline(f"model:{Path(empty) / model_id('model')[len('dice:'):]}",
                                WORK / "again.mlir", args.jobs)
    lowered = (WORK / "lowered.mlir").read_text()
    if (WORK / "again.mlir").read_text() != lowered:
        fail("the second compile (database only) printed different IR")
    if again != report:
        fail("the second compile reported differently")

    labels = json.loads((GPU / "labels.json").read_text())
    stored = {c["candidate_hash"]: c for c in resolved}
    rows, problems = [], []
    for label in labels:
        c = stored[label["candidate_hash"]]
        want = EXPECTED_STATUS.get(label["kind"], {c["status"]})
        speedup = c["verdict"].get("speedup")
        rows.append((label["fingerprint"][:12], label["ops"], label["kind"], label["file"],
                     c["status"], (f"{speedup:.2f}x" if speedup >= 0.1 else f"{speedup:.2g}x") if speedup else "-"))
        if c["status"] not in want:
            problems.append(f"{label['file']} ({label['kind']}): {c['status']}, "
                            f"expected {' or '.join(sorted(want))}: "
                            f"{c['verdict'].get('reason')}")
    called = sorted(set(l.split("@dice_k_")[1].split("(")[0] for l in lowered.splitlines()
                        if "call @dice_k_" in l))
    manifest = json.loads((WORK / "lowered" / "manifest.json").read_text()) \
        if (WORK / "lowered" / "manifest.json").exists() else {"kernels": {}}
    honest = {l["fingerprint"] for l in labels
              if l["kind"] in ("honest", "model") and
              stored[l["candidate_hash"]]["status"] == "accepted"}
    if not called:
        problems.append("no kernel is called")
    if case.engine == "model" and len(called) < MIN_MODEL_KERNELS:
        problems.append(f"{len(called)} requests call a model-written kernel, "
                        f"fewer than {MIN_MODEL_KERNELS}")
    for fp in called:
        if fp not in honest:
            problems.append(f"k_{fp} is called but has no accepted honest candidate")
        if fp not in manifest["kernels"]:
            problems.append(f"k_{fp} is called but not in the manifest")

    # What the GPU runs next: the lowered plan, the manifest and libraries.
    plan = plan_of(lowered)
    (GPU / "plan.json").write_text(json.dumps(plan))
    if (GPU / "artifacts").exists():
        shutil.rmtree(GPU / "artifacts")
    if (WORK / "lowered").exists():
        shutil.copytree(WORK / "lowered", GPU / "artifacts",
                        ignore=shutil.ignore_patterns("*.c"))
    kernel_steps = sum(1 for s in plan["steps"] if s["kind"] == "kernel")

    lines = ["# dice-pipeline end to end: resolve (CPU)", "",
             "```", *report, "```", "",
             "| request | ops | kind | file | verdict | speedup |",
             "| --- | --- | --- | --- | --- | --- |",
             *[f"| {' | '.join(r)} |" for r in rows], "",
             f"kernels called: {', '.join('k_' + fp for fp in called) or 'none'}; "
             f"{kernel_steps} kernel steps in the plan",
             "second compile (database only, no engine): identical IR and report", ""]
    if problems:
        lines += ["problems:", *[f"- {p}" for p in problems]]
    (GPU / "resolve.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    if problems:
        fail(f"{len(problems)} problems")
    print("resolve: OK")


def inductor_baseline(args):
    """On the GPU: each partition's eager and Inductor device time, and the
    dice.toml that verifies against the Inductor times."""
    from dice.backend.baseline import partition_times, write_times
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    partitions = json.loads((GPU / "partitions.json").read_text())
    times = partition_times(partitions, torch.device("cuda"))
    write_times(out / "baseline-times.json", times)
    (out / "inductor.toml").write_text(
        f'[verifier]\nbaseline = "inductor"\nbaseline_times = "{out / "baseline-times.json"}"\n')
    for p in partitions:
        t = times[p["fingerprint"]]
        print(f"{p['fingerprint'][:12]}  eager {t['eager_ms'] * 1000:8.1f} us  "
              f"inductor {t['inductor_ms'] * 1000:8.1f} us  {' '.join(op_names(p['program']))}")
    return 0


def compare_baselines(args):
    """The two verdicts of each candidate side by side: against the eager
    reference (both timed with CUDA events) and against Inductor (both
    timed by their kernels' durations)."""
    def load(path):
        return {v["candidate_hash"]: v for v in map(json.loads, Path(path).read_text().splitlines())
                if v}

    def verdict(v):
        s = v.get("speedup")
        return f"{v.get('status', '-')} {s:.2f}x" if s else v.get("status", "-")

    def us(ms):
        return f"{ms * 1000:.1f}" if ms else "-"

    eager, inductor = load(args.eager), load(args.inductor)
    times = json.loads(Path(args.times).read_text())["times"]
    lines = ["| request | candidate | vs eager | kernel us (events) | eager ref us (events) "
             "| vs Inductor | kernel us (device) | Inductor us (device) | eager ref us (device) |",
             "| --- | --- | --- | ---: | ---: | --- | ---: | ---: | ---: |"]
    for h, v in eager.items():
        w = inductor.get(h, {})
        t = times.get(v["fingerprint"], {})
        lines.append(f"| {v['fingerprint'][:12]} | {h[:12]} | {verdict(v)} | {us(v.get('kernel_ms'))} "
                     f"| {us(v.get('baseline_ms'))} | {verdict(w)} | {us(w.get('kernel_ms'))} "
                     f"| {us(t.get('inductor_ms'))} | {us(t.get('eager_ms'))} |")
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text)
    print(text)
    return 0


def backend_graph(args, model, inputs, plan, runtime, expected):
    """The plan as the torch.compile backend runs it: traced, compiled by
    Inductor with the kernels as external ops; its outputs, the GPU kernels
    the profiler saw inside the dice ops, and eager / Inductor / dice times."""
    from torch.profiler import ProfilerActivity, profile
    from dice.backend.rebuild import PlanRunner, compile_runner
    from dice.bench.timing import time_forward

    def time_gpu(fn, inputs, runs):
        return statistics.median(time_forward(fn, inputs, runs, "cuda"))

    with torch.no_grad():
        compiled = compile_runner(PlanRunner(plan, runtime, "cuda"), inputs, "inductor")
        got = compiled(*inputs)[0]
        error = ((got - expected).abs().max() / expected.abs().max()).item()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            compiled(*inputs)
            torch.cuda.synchronize()
        dice_ops = [e for e in prof.events() if e.name.startswith("dice::k_")]
        kernels = sorted({k.name for e in dice_ops for k in e.kernels})
        inductor = torch.compile(model)
        inductor(*inputs)
        times = {"eager_ms": time_gpu(model, inputs, args.runs),
                 "inductor_ms": time_gpu(inductor, inputs, args.runs),
                 "dice_ms": time_gpu(compiled, inputs, args.runs)}
    return {"max_relative_error": error, "dice_ops_in_profile": sorted({e.name for e in dice_ops}),
            "kernels_in_dice_ops": kernels, **times,
            "ok": error <= args.rtol and bool(kernels)}


def run_lowered(args):
    """On the GPU: the lowered plan through the manifest's kernels vs PyTorch."""
    from dice.plan import run_plan
    from dice.runtime import Runtime
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    saved = torch.load(GPU / "model.pt")
    plan = json.loads((GPU / "plan.json").read_text())
    device = torch.device("cuda")
    model = CASES[case_of_work()].model().eval().to(device)
    model.load_state_dict(saved["state_dict"])
    inputs = [x.to(device) for x in saved["inputs"]]
    runtime = Runtime(GPU / "artifacts" / "manifest.json")
    with torch.no_grad():
        expected = model(*inputs)
        got = run_plan(plan, inputs, manifest=runtime)[0]
    torch.cuda.synchronize()
    error = ((got - expected).abs().max() / expected.abs().max()).item()
    kernels = [s["fingerprint"] for s in plan["steps"] if s["kind"] == "kernel"]
    ok = bool(kernels) and got.shape == expected.shape and error <= args.rtol
    result = {"kernel_steps": kernels, "max_relative_error": error, "rtol": args.rtol,
              "device": torch.cuda.get_device_name(), "ok": ok}

    # The same plan in C++: dice-reference-run, its kernel steps through
    # libDiceRuntime's C ABI as lowered code calls them.
    cpp_line = ""
    if args.reference_run:
        torch.save([x.cpu() for x in inputs], out / "inputs.pt")
        proc = subprocess.run(
            [args.reference_run, "--plan", GPU / "plan.json", "--device", "cuda",
             "--manifest", GPU / "artifacts" / "manifest.json",
             "--inputs", out / "inputs.pt", "--outputs", out / "cpp-outputs.pt"],
            capture_output=True, text=True)
        if proc.returncode != 0:
            cpp_error, cpp_ok = None, False
            cpp_line = f"dice-reference-run failed: {proc.stderr.strip()}"
        else:
            (cpp,) = torch.load(out / "cpp-outputs.pt")
            cpp = cpp.to(device)
            cpp_error = ((cpp - expected).abs().max() / expected.abs().max()).item()
            cpp_ok = cpp.shape == expected.shape and cpp_error <= args.rtol
            cpp_line = (f"the same plan through dice-reference-run (C++, kernel steps "
                        f"through libDiceRuntime): max relative error {cpp_error:.2e}: "
                        f"{'OK' if cpp_ok else 'FAIL'}")
        result.update(cpp_max_relative_error=cpp_error, cpp_ok=cpp_ok)
        result["ok"] = ok = ok and cpp_ok
    backend = backend_graph(args, model, inputs, plan, runtime, expected)
    result["backend"] = backend
    result["ok"] = ok = ok and backend["ok"]
    backend_line = (
        f"as the torch.compile backend runs it (plan traced by make_fx, compiled by "
        f"Inductor, kernels as torch.ops.dice calls): max relative error "
        f"{backend['max_relative_error']:.2e}; the profiler shows "
        f"{', '.join(backend['dice_ops_in_profile']) or 'no dice op'} launching "
        f"{', '.join(backend['kernels_in_dice_ops']) or 'no kernel'}; median "
        f"{backend['eager_ms'] * 1000:.1f} us eager, {backend['inductor_ms'] * 1000:.1f} us "
        f"torch.compile (Inductor), {backend['dice_ms'] * 1000:.1f} us with the dice kernels "
        f"({backend['inductor_ms'] / backend['dice_ms']:.2f}x over Inductor); "
        f"{'OK' if backend['ok'] else 'FAIL'}")
    (out / "e2e.json").write_text(json.dumps(result, indent=1) + "\n")
    resolve_md = (GPU / "resolve.md").read_text() if (GPU / "resolve.md").exists() else ""
    (out / "e2e.md").write_text(
        resolve_md + "\n# run (GPU)\n\n"
        f"{result['device']}: the lowered plan ({len(kernels)} kernel steps: "
        f"{', '.join('k_' + k for k in kernels)}) vs the PyTorch model on CUDA: "
        f"max relative error {error:.2e} (tolerance {args.rtol:g}); "
        f"{cpp_line or 'no C++ run asked for'}.\n\n{backend_line}.\n\n"
        f"Overall {'OK' if ok else 'FAIL'}\n")
    print((out / "e2e.md").read_text())
    return 0 if ok else 1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="phase", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--jobs", type=int, default=2)
    p = sub.add_parser("resolve")
    p.add_argument("--gpu", required=True, help="the output folder of the verify phase")
    p.add_argument("--jobs", type=int, default=2)
    p = sub.add_parser("run")
    p.add_argument("--out", required=True)
    p.add_argument("--rtol", type=float, default=1e-4)
    p.add_argument("--reference-run", help="dice-reference-run to run the plan with in C++ too")
    p.add_argument("--runs", type=int, default=100, help="timed runs (median)")
    p = sub.add_parser("baseline")
    p.add_argument("--out", required=True)
    p = sub.add_parser("compare")
    p.add_argument("--eager", required=True)
    p.add_argument("--inductor", required=True)
    p.add_argument("--times", required=True)
    p.add_argument("--out", required=True)
    for p in sub.choices.values():
        p.add_argument("--case", choices=sorted(CASES), default="block",
                       help="which program and engine (module docstring); its folder "
                            "is .dice/pipeline-e2e/CASE")
    args = parser.parse_args(argv)
    case = set_case(args.case)
    if args.phase != "prepare" and case_of_work() != case.name:
        fail(f"{GPU} holds the {case_of_work()} case's work, not {case.name}'s")
    if args.phase == "baseline":
        return inductor_baseline(args)
    if args.phase == "compare":
        return compare_baselines(args)
    if args.phase == "prepare":
        return prepare(args, case) or 0
    if args.phase == "resolve":
        return resolve(args, case) or 0
    return run_lowered(args)


if __name__ == "__main__":
    sys.exit(main())
