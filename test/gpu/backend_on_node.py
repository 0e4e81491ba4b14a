"""`torch.compile(model, backend="dice")` for real on a GPU node without
LLVM or torch-mlir (docs/gpu-node.md).

  prepare (CPU, with torch-mlir)  compile the model once with engine 'none'
                                  and an export cache: the cache records
                                  the graph's export, and the report names
                                  its kernel requests, for which the replay
                                  file gets the hand-written candidates of
                                  the end-to-end test (pipeline_e2e.py's
                                  table); also records the exports of
                                  the README's example and of tasks/,
                                  for user_path.py and `dice bench tasks`.
  run (GPU node)                  the same model through the backend with
                                  those candidates: dice-opt and dice-plan
                                  are the static tools, the export comes
                                  from the cache. Outputs must match eager,
                                  the profiler must show the dice operators
                                  launching kernels, and the report gives
                                  each request's verdict against eager and
                                  Inductor. $OUT/backend.json and .md.

Everything lives under .dice/backend-on-node/ (carry it, .gpu-tools and
.deps to the node; scripts/gpu-node.sh sets the node up).
"""

import argparse
import json
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "python"), str(ROOT / "test" / "gpu")]

import dice.backend  # noqa: E402
from pipeline_e2e import CANDIDATES, KERNELS, Block  # noqa: E402
from dice.pipeline import write_replay  # noqa: E402

WORK = ROOT / ".dice" / "backend-on-node"
EXPORTS = WORK / "exports"
REPLAY = WORK / "replay.jsonl"
SHAPE = (32, 128)


def model_and_input(device):
    torch.manual_seed(0)
    model = Block().eval().to(device)
    x = torch.randn(*SHAPE, generator=torch.Generator().manual_seed(1)).to(device)
    return model, x


def compiled(model, engine, extra=None):
    torch._dynamo.reset()
    dice.backend.clear_reports()
    return torch.compile(model, backend=dice.backend.dice_backend, options={
        "granularity": "fusion", "fallback": "inductor", "engine": engine,
        "export_cache": str(EXPORTS), "database.path": str(WORK / "kernels.db"),
        "artifacts.dir": str(WORK / "artifacts"), **(extra or {})})


def prepare(args):
    import shutil
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    model, x = model_and_input("cpu")
    with torch.no_grad():
        compiled(model, "none")(x)
    (report,) = dice.backend.reports()
    entries = []
    for request in report.requests:
        if request.computes not in CANDIDATES:
            sys.exit(f"FAIL: no candidates for a request of: {request.computes}")
        for _, name in CANDIDATES[request.computes]:
            path = name if Path(name).is_absolute() else KERNELS / name
            entries.append((request.fingerprint, Path(path).read_text()))
    write_replay(REPLAY, entries)
    print(f"{len(report.requests)} requests, {len(entries)} candidates in {REPLAY}")
    # The README's example, for test/gpu/user_path.py.
    from dice import examples
    example, inputs = examples.build("convnet")
    with torch.no_grad():
        compiled(example, "none")(*inputs)
    from dice.bench.record_exports import record_exports
    recorded = record_exports(ROOT / "tasks", EXPORTS)
    print(f"tasks/: {recorded.exported} exports of {recorded.graphs} graphs "
          f"({len(recorded.skipped)} not recorded)")


def dice_kernel_events(fn, x):
    """(dice operator calls, CUDA kernels launched under them) in one profiled call."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        with torch.no_grad():
            fn(x)
        torch.cuda.synchronize()
    ops = [e for e in prof.events() if e.name.startswith("dice::k_")]
    kernels = sorted({k.name for e in ops for k in e.kernels})
    return [e.name for e in ops], kernels


def run(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model, x = model_and_input("cuda")
    start = time.monotonic()
    fn = compiled(model, f"replay:{REPLAY}", {"jobs": 16})
    with torch.no_grad():
        got = fn(x)
        expected = model(x)
    compile_s = time.monotonic() - start
    (report,) = dice.backend.reports()
    error = (got - expected).abs().max().item()
    ops, kernels = dice_kernel_events(fn, x)
    result = {
        "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
        "compile_seconds": compile_s, "used_dice": report.used_dice,
        "fallback_reason": report.fallback_reason, "max_abs_error": error,
        "dice_graph_ms": report.dice_graph_ms, "inductor_graph_ms": report.inductor_graph_ms,
        "matches_eager": bool(torch.allclose(got, expected, rtol=1e-4, atol=1e-5)),
        "profiled_dice_operators": ops, "profiled_dice_kernels": kernels,
        "requests": [{"fingerprint": r.fingerprint, "ops": r.computes, "status": r.status,
                      "used": bool(r.used), "speedup": r.speedup,
                      "kernel_ms": r.kernel_ms, "eager_ms": r.eager_ms,
                      "inductor_ms": r.inductor_ms, "reason": r.reason}
                     for r in report.requests],
    }
    (out / "backend.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [f"# torch.compile(backend=\"dice\") on {result['gpu']}", "",
             f"- compile (export from the cache, pipeline, Inductor): {compile_s:.1f} s",
             f"- whole graph: {report.dice_graph_ms} ms with dice's kernels, "
             f"{report.inductor_graph_ms} ms as Inductor alone compiles it"
             + (f" (so Inductor's: {report.fallback_reason})" if not report.used_dice else ""),
             f"- dice used: {report.used_dice}; outputs match eager: "
             f"{result['matches_eager']} (max abs error {error:.2e})",
             f"- profiled: {len(ops)} dice operator calls launching {len(kernels)} kernels "
             f"({', '.join(kernels)})", "",
             "| request | status | used | speedup | kernel ms | eager ms | Inductor ms |",
             "| --- | --- | --- | --- | --- | --- | --- |"]

    def ms(value):
        return "-" if value is None else f"{value:.4f}"

    for r in result["requests"]:
        speedup = "-" if r["speedup"] is None else f"{r['speedup']:.2f}x"
        lines.append(f"| {r['ops']} | {r['status']} | {r['used']} | {speedup} | "
                     f"{ms(r['kernel_ms'])} | {ms(r['eager_ms'])} | {ms(r['inductor_ms'])} |")
    (out / "backend.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    if not result["matches_eager"]:
        sys.exit("FAIL: outputs differ from eager")
    # Accepted kernels run unless the graph with them lost to Inductor's
    # code for the whole graph (dice/backend/graph_check.py).
    lost = report.dice_graph_ms is not None and report.dice_graph_ms > report.inductor_graph_ms
    if not lost and not (report.used_dice and ops and kernels):
        sys.exit("FAIL: no dice kernel ran in the compiled model")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("phase", choices=["prepare", "run"])
    parser.add_argument("--out", default="/tmp/dice-backend-on-node")
    args = parser.parse_args(argv)
    (prepare if args.phase == "prepare" else run)(args)


if __name__ == "__main__":
    main()
