"""A PyTorch user's `torch.compile(model, backend="dice")` on a GPU node, with
the default model (model/default), on the README's example and on three
`tasks/` programs of each level, chosen from the kinds that once raised
into the user's program (matmul, linear, transposed convolution).

For each program: no exception reaches the caller, the outputs match eager,
the profiler shows which `dice::k_<fingerprint>` operators ran (where
requests were accepted) and Inductor's kernels elsewhere, and the report
gives each request's verdict. Then the same compile with one of dice's own
Inductor calls made to fail: the graph takes the fallback, with a warning,
and the outputs still match.

    python test/gpu/user_path.py --out DIR     # DIR/user-path.json and .md

Runs on a node set up as docs/gpu-node.md says (scripts/gpu-node.sh, the
exports recorded by `backend_on_node.py prepare`).
"""

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "python")]

import dice.backend  # noqa: E402
import dice.backend.baseline  # noqa: E402
from dice import examples  # noqa: E402
from dice.bench.tasks import Task, load_task  # noqa: E402

WORK = ROOT / ".dice" / "backend-on-node"
EXPORTS = WORK / "exports"
TASKS = ["level1/29_matmul_bt", "level1/42_linear_3d", "level1/27_conv_transpose2d",
         "level2/01_linear_gelu_tanh", "level2/02_matmul_bias_layernorm",
         "level2/09_deconv_bn_leaky",
         "level3/01_ffn_residual", "level3/10_llama_decoder_block",
         "level3/11_small_cnn_classifier"]


def programs(device):
    """(name, module, inputs) of the README's example and the tasks."""
    module, inputs = examples.build("convnet")
    yield "example/convnet", module.to(device), tuple(x.to(device) for x in inputs)
    for name in TASKS:
        module, inputs = load_task(Task(name, ROOT / "tasks" / f"{name}.py"), device)
        yield name, module.eval(), inputs(0)


def compiled(module, work):
    torch._dynamo.reset()
    dice.backend.clear_reports()
    return torch.compile(module, backend=dice.backend.dice_backend, options={
        "granularity": "fusion", "fallback": "inductor", "jobs": 16,
        "export_cache": str(EXPORTS), "database.path": str(work / "kernels.db"),
        "artifacts.dir": str(work / "artifacts")})


def profiled_kernels(fn, inputs):
    """({dice operator: its CUDA kernels}, other CUDA kernels) of one call."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        with torch.no_grad():
            fn(*inputs)
        torch.cuda.synchronize()
    dice_ops, under_dice = {}, set()
    for e in prof.events():
        if e.name.startswith("dice::k_"):
            names = sorted({k.name for k in e.kernels})
            dice_ops.setdefault(e.name, names)
            under_dice.update(names)
    others = sorted({e.name for e in prof.events()
                     if e.device_type == torch.autograd.DeviceType.CUDA
                     and e.name not in under_dice})
    return dice_ops, others


def matches(got, expected):
    got = got if isinstance(got, (tuple, list)) else (got,)
    expected = expected if isinstance(expected, (tuple, list)) else (expected,)
    return all(torch.allclose(g.float(), e.float(), rtol=1e-2, atol=1e-2)
               for g, e in zip(got, expected, strict=True))


def one(name, module, inputs, work):
    """What the user sees of one program; never raises."""
    result = {"program": name}
    start = time.monotonic()
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            fn = compiled(module, work)
            with torch.no_grad():
                got = fn(*inputs)
                expected = module(*inputs)
        result["compile_seconds"] = time.monotonic() - start
        result["matches_eager"] = matches(got, expected)
        if inputs[0].is_cuda:
            result["dice_operators"], result["other_kernels"] = profiled_kernels(fn, inputs)
        result["warnings"] = sorted({str(w.message).splitlines()[0] for w in seen})
    except Exception as e:  # the defect this run looks for: say it, go on
        result["raised"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    reports = dice.backend.reports()
    result["summary"] = dice.backend.summary()
    result["graphs"] = [{"used_dice": r.used_dice, "fallback_reason": r.fallback_reason,
                         "dice_graph_ms": r.dice_graph_ms,
                         "inductor_graph_ms": r.inductor_graph_ms,
                         "requests": [{"ops": q.computes, "status": q.status,
                                       "used": bool(q.used), "speedup": q.speedup,
                                       "eager_ms": q.eager_ms, "inductor_ms": q.inductor_ms,
                                       "reason": q.reason} for q in r.requests]}
                        for r in reports]
    return result


def with_failing_inductor_call(name, module, inputs, work):
    """The same compile with dice's timing of a partition under Inductor
    made to fail: the graph must fall back, and say so."""
    real = dice.backend.baseline.inductor_compiled

    def failing(*args, **kwargs):
        raise RuntimeError("injected: Inductor failed inside dice")

    dice.backend.baseline.inductor_compiled = failing
    try:
        result = one(name, module, inputs, work)
    finally:
        dice.backend.baseline.inductor_compiled = real
    reasons = [g["fallback_reason"] or "" for g in result["graphs"]]
    result["fell_back"] = any("injected" in r for r in reasons)
    return result


def markdown(results, injected):
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "the CPU"
    lines = [f"# torch.compile(backend=\"dice\") as a user runs it, on {device}", "",
             "| program | raised | matches eager | compile s | requests (status: count) "
             "| dice operators run |", "| --- | --- | --- | ---: | --- | --- |"]
    for r in results:
        statuses = {}
        for g in r["graphs"]:
            for q in g["requests"]:
                statuses[q["status"]] = statuses.get(q["status"], 0) + 1
        lines.append(f"| {r['program']} | {r.get('raised', 'no')} | "
                     f"{r.get('matches_eager', '-')} | {r.get('compile_seconds', 0):.1f} | "
                     f"{', '.join(f'{k}: {v}' for k, v in sorted(statuses.items())) or '-'} | "
                     f"{len(r.get('dice_operators', {}))} |")
    if injected is not None:
        lines += ["", f"Injected failure of dice's Inductor call ({injected['program']}): "
                  f"raised: {injected.get('raised', 'no')}; fell back: "
                  f"{injected['fell_back']}; matches eager: {injected.get('matches_eager')}"]
    lines += ["", "```", *(r["summary"] for r in results), "```"]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="/tmp/dice-user-path")
    parser.add_argument("--device", default="cuda",
                        help="cpu: a dry run of this script (no verdicts, no profile)")
    parser.add_argument("--programs", nargs="+", metavar="NAME",
                        help="only these (example/convnet, level1/29_matmul_bt, ...): a "
                             "second compile in a new process, from the kernel database "
                             "the first one filled")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = WORK / "user-path"
    results = []
    for name, module, inputs in programs(args.device):
        if args.programs and name not in args.programs:
            continue
        results.append(one(name, module, inputs, work))
        print(json.dumps({k: results[-1].get(k) for k in
                          ("program", "raised", "matches_eager", "compile_seconds")}),
              flush=True)
    injected = None
    if not args.programs:
        name, module, inputs = next(p for p in programs(args.device) if p[0] == TASKS[0])
        injected = with_failing_inductor_call(name, module, inputs, work / "injected")
    (out / "user-path.json").write_text(json.dumps(
        {"gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
         "torch": torch.__version__,
         "results": results, "injected": injected}, indent=1) + "\n")
    text = markdown(results, injected)
    (out / "user-path.md").write_text(text)
    print(text)
    failed = [r["program"] for r in results if "raised" in r or not r.get("matches_eager")]
    if failed or (injected is not None and (not injected["fell_back"] or "raised" in injected)):
        sys.exit(f"FAIL: {', '.join(failed) or 'the injected failure did not fall back'}")


if __name__ == "__main__":
    main()
