"""One coverage program through the front end, measured at each stage.

export (torch-mlir) -> dice-opt --dice-outline=granularity=G --dice-scaffold
-> dice-plan -> the plan run by the printed Python programs (dice.plan) and
by the ATen executor (dice-reference-run --plan), both compared with eager
PyTorch on fresh inputs. Nothing here raises for a program that fails: each
stage records its outcome and the first line of its error.
"""

import inspect
import json
import os
import re
import subprocess
import tempfile
import time
import traceback
from pathlib import Path

import torch

from mlir_ops import count_ops

GRANULARITIES = ("op", "fusion", "function")
MAX_RELATIVE_ERROR = 1e-5
TIMEOUT_S = 120
# The tools run one thread each: the suite runs two programs at a time.
TOOL_ENV = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def first_line(text, width=160):
    line = next((l.strip() for l in (text or "").splitlines() if l.strip()), "")
    return line if len(line) <= width else line[:width - 3] + "..."


def error_line(stderr):
    """A tool's first error line (remarks come before it), without file names."""
    lines = [l for l in (stderr or "").splitlines() if l.strip()]
    error = next((l for l in lines if "error" in l.lower()), lines[0] if lines else "")
    return first_line(re.sub(r"^\S+:\d+:\d+: ", "", error.strip()))


def tool(bin_dir, name, *args, stdin=None):
    """(returncode, stdout, stderr); a timeout reads as returncode None."""
    try:
        proc = subprocess.run([str(bin_dir / name), *map(str, args)], input=stdin,
                              capture_output=True, text=True, timeout=TIMEOUT_S, env=TOOL_ENV)
    except subprocess.TimeoutExpired:
        return None, "", f"error: {name} timed out after {TIMEOUT_S} s"
    return proc.returncode, proc.stdout, proc.stderr


def crashed(returncode, stderr):
    """A signal, a timeout or an 'internal error': a compiler bug, not a limitation."""
    return returncode is None or returncode < 0 or "internal error" in stderr \
        or "Stack dump" in stderr or "LLVM ERROR" in stderr


def dynamic_shapes(module, inputs, which):
    """A batch Dim on dim 0 of the chosen tensors; a chosen Python int is a
    dynamic int (torch.export would bake it in as a constant otherwise)."""
    batch = torch.export.Dim("batch", min=1, max=1024)
    specs = tuple(None if which != "all" and i not in which
                  else {0: batch} if isinstance(x, torch.Tensor) else torch.export.Dim.DYNAMIC
                  for i, x in enumerate(inputs))
    params = inspect.signature(module.forward).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return (specs,)  # forward(*inputs) takes one tuple
    return specs


def fresh_inputs(example, positive, seed, batch=None, numbers_vary=False):
    """New values of the example inputs' shapes and dtypes (indices stay in
    range); `batch` maps input positions to another size of dimension 0. A
    Python int stays the example's unless `numbers_vary` (exported dynamic)."""
    gen = torch.Generator().manual_seed(seed)
    fresh = []
    for i, x in enumerate(example):
        if not isinstance(x, torch.Tensor):
            fresh.append(x + 2 if numbers_vary and isinstance(x, int) else x)
            continue
        if batch and i in batch:
            x = x.new_zeros((batch[i],) + tuple(x.shape[1:])) + (x.max() if x.numel() else 0)
        if x.dtype == torch.bool:
            fresh.append(torch.rand(x.shape, generator=gen) > 0.5)
        elif not x.dtype.is_floating_point:
            high = int(x.max().item()) + 1 if x.numel() else 1
            fresh.append(torch.randint(0, max(high, 1), x.shape, generator=gen, dtype=x.dtype))
        elif positive:
            fresh.append((torch.rand(x.shape, generator=gen) + 0.1).to(x.dtype))
        else:
            fresh.append(torch.randn(x.shape, generator=gen).to(x.dtype))
    return fresh


def relative_error(actual, expected):
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return float("inf")
    if expected.numel() == 0:
        return 0.0
    a, e = actual.double(), expected.double()
    same = (a == e) | (a.isnan() & e.isnan())  # equal infinities and NaNs agree
    if bool(same.all()):
        return 0.0
    scale = e[e.isfinite()].abs().max().item() if bool(e.isfinite().any()) else 1.0
    return (a - e)[~same].abs().max().item() / (scale or 1.0)


def flatten(outputs):
    if isinstance(outputs, torch.Tensor):
        return [outputs]
    return [t for o in outputs for t in flatten(o)]


def compare(outputs, expected):
    """(max relative error, error line): the worst output, or why none compares."""
    if len(outputs) != len(expected):
        return None, f"{len(outputs)} outputs, eager has {len(expected)}"
    worst = 0.0
    for i, (got, want) in enumerate(zip(outputs, expected)):
        if got.shape != want.shape or got.dtype != want.dtype:
            return None, (f"output {i}: {got.dtype} {list(got.shape)}, eager has "
                          f"{want.dtype} {list(want.shape)}")
        worst = max(worst, relative_error(got, want))
    return worst, None


def run_python(plan, inputs, expected):
    """{max_rel_err, error} of the plan run by its printed Python programs."""
    from dice.plan import run_plan

    try:
        err, why = compare(flatten(run_plan(plan, list(inputs))), expected)
        return {"max_rel_err": err, "error": why}
    except Exception as e:  # a printed program that does not run is a finding
        return {"max_rel_err": None, "error": first_line(f"{type(e).__name__}: {e}")}


def merge_plans(plans):
    """One plan computing every plan's outputs: the same arguments, the
    values of each later plan renumbered after the earlier ones'. The ATen
    executor then starts (and loads LibTorch) once for all granularities."""
    n = len(plans[0]["arguments"])
    merged = {"function": plans[0].get("function", ""), "arguments": plans[0]["arguments"],
              "steps": [], "outputs": []}
    offset, top = 0, n - 1
    for plan in plans:
        shift = lambda v, offset=offset: v if v < n else v + offset  # noqa: E731
        for step in plan["steps"]:
            step = dict(step)
            if step["kind"] == "weight":
                step["result"] = shift(step["result"])
                top = max(top, step["result"])
            else:
                step["args"] = [shift(a) for a in step["args"]]
                step["results"] = [shift(r) for r in step["results"]]
                top = max([top, *step["results"]])
            merged["steps"].append(step)
        merged["outputs"] += [shift(o) for o in plan["outputs"]]
        offset = top + 1 - n
    return merged


def run_aten(bin_dir, plan, inputs, work):
    """(outputs, None) of dice-reference-run --plan, or (None, {error, crashed})."""
    plan_path, in_path, out_path = work / "plan.json", work / "in.pt", work / "out.pt"
    plan_path.write_text(json.dumps(plan))
    torch.save(list(inputs), in_path)
    out_path.unlink(missing_ok=True)
    rc, _, stderr = tool(bin_dir, "dice-reference-run", "--plan", plan_path, "--inputs", in_path,
                         "--outputs", out_path)
    if rc != 0:
        return None, {"max_rel_err": None, "error": error_line(stderr),
                      "crashed": crashed(rc, stderr)}
    return list(torch.load(out_path)), None


def run_aten_all(bin_dir, plans, inputs, expected, work):
    """{granularity: {max_rel_err, error}} through the ATen executor: all
    plans in one run, and each alone when that run fails (to say which)."""
    results = {}
    outputs, failure = run_aten(bin_dir, merge_plans(list(plans.values())), inputs, work)
    if failure is None:
        for g, plan in plans.items():
            mine, outputs = outputs[:len(plan["outputs"])], outputs[len(plan["outputs"]):]
            err, why = compare(mine, expected)
            results[g] = {"max_rel_err": err, "error": why}
        return results
    for g, plan in plans.items():
        mine, failure = run_aten(bin_dir, plan, inputs, work)
        if failure is not None:
            results[g] = failure
        else:
            err, why = compare(mine, expected)
            results[g] = {"max_rel_err": err, "error": why}
    return results


REMARK = re.compile(r"remark: (.*)$")


def compile_at(bin_dir, source, granularity):
    """(record, plan or None): outline + scaffold at one granularity, then dice-plan."""
    rc, outlined, stderr = tool(bin_dir, "dice-opt", source,
                                f"--dice-outline=granularity={granularity}", "--dice-scaffold",
                                "-mlir-print-op-on-diagnostic=false")
    record = {"compiled": rc == 0, "crashed": crashed(rc, stderr),
              "remarks": [m.group(1) for l in stderr.splitlines() if (m := REMARK.search(l))]}
    if rc != 0:
        record["error"] = error_line(stderr)
        return record, None
    record.update(count_ops(outlined))
    rc, plan_text, stderr = tool(bin_dir, "dice-plan", stdin=outlined)
    if rc != 0:
        record["plan_error"] = error_line(stderr)
        record["plan_crashed"] = crashed(rc, stderr)
        return record, None
    plan = json.loads(plan_text)
    record["levels"] = [s["level"] for s in plan["steps"] if "request" in s]
    return record, plan


def check(bin_dir, records, plans, inputs, expected, work):
    """Both backends on every plan; a granularity is faithful when both are close."""
    if not plans:
        return
    aten = run_aten_all(bin_dir, plans, inputs, expected, work)
    for g, plan in plans.items():
        backends = {"python": run_python(plan, inputs, expected), "aten": aten[g]}
        records[g]["backends"] = backends
        records[g]["faithful"] = all(
            b["max_rel_err"] is not None and b["max_rel_err"] <= MAX_RELATIVE_ERROR
            for b in backends.values())


def measure(program, mode, bin_dir, granularities=GRANULARITIES, exports=None):
    """The record of `program` (a programs.Program) exported `static` or
    `dynamic`; the export's MLIR is also written to `exports`, a directory."""
    from dice.torch_mlir_import import export_linalg_on_tensors

    started = time.monotonic()
    record = {"name": program.name, "family": program.family, "mode": mode, "granularities": {}}
    module, example = program.build()
    options = {}
    if mode == "dynamic":
        options["dynamic_shapes"] = dynamic_shapes(module, example, program.dynamic)
    try:
        mlir = export_linalg_on_tensors(module, example, func_name=program.name, **options)
    except Exception as e:
        record["export_error"] = first_line(f"{type(e).__name__}: {e}")
        record["seconds"] = time.monotonic() - started
        return record
    if exports is not None:
        (exports / f"{program.name}-{mode}.mlir").write_text(mlir)
    # A dynamic export runs at another batch than it was exported with: the
    # plan's sizes must come from its inputs.
    other = None
    if mode == "dynamic":
        dynamic = range(len(example)) if program.dynamic == "all" else program.dynamic
        other = {i: example[i].shape[0] + 3 for i in dynamic
                 if isinstance(example[i], torch.Tensor) and example[i].dim() > 0}
    inputs = fresh_inputs(example, program.positive, seed=7, batch=other,
                          numbers_vary=mode == "dynamic")
    with torch.no_grad():
        expected = flatten(module(*inputs))
    # A plan takes a Python number as a 0-d tensor of its dtype.
    inputs = [x if isinstance(x, torch.Tensor) else torch.tensor(
        x, dtype={bool: torch.bool, int: torch.int64, float: torch.float64}[type(x)])
        for x in inputs]
    with tempfile.TemporaryDirectory(prefix=f"coverage-{program.name}-") as tmp:
        work = Path(tmp)
        source = work / f"{program.name}.mlir"
        source.write_text(mlir)
        plans = {}
        for g in granularities:
            try:
                record["granularities"][g], plan = compile_at(bin_dir, source, g)
            except Exception:  # a bug of this script must not hide the other results
                record["granularities"][g], plan = {
                    "compiled": False, "crashed": False, "remarks": [],
                    "error": "coverage script: " + traceback.format_exc().splitlines()[-1]}, None
            if plan is not None:
                plans[g] = plan
        check(bin_dir, record["granularities"], plans, inputs, expected, work)
    record["seconds"] = time.monotonic() - started
    return record
