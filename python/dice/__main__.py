"""python -m dice: compile an example PyTorch program with dice-opt.

    python -m dice compile [--example convnet] [--granularity fusion] [--jobs 2]

Exports the program with torch-mlir (linalg-on-tensors), prints its kernel
requests, checks their reference programs against PyTorch, then runs the
whole `--dice-pipeline` (outline, scaffold, infill, verify, resolve, lower)
with the example's replay file of candidate kernels
(python/dice/example_kernels/<example>.jsonl) and prints the report and what
happened to each request's candidates.
"""

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import torch

from dice import examples
from dice.pipeline import (SOURCE_ROOT, compile_pipeline, find_tool, first_line, plan_of,
                           report_and_remarks, requests, stored_candidates, write_config)
from dice.plan import run_plan
from dice.torch_mlir_import import export_linalg_on_tensors

KERNELS_DIR = Path(__file__).resolve().parent / "example_kernels"


def shapes(types):
    return " ".join("x".join(map(str, t["shape"])) or "scalar" for t in types)


def summary(program):
    """The torch-level ops a request computes, without the reshapes."""
    fns = [op["fn"] for op in program["ops"]
           if op["fn"] not in ("scalar", "full", "reshape", "expand", "permute")]
    compact = []
    for fn in fns:
        if not compact or compact[-1] != fn:
            compact.append(fn)
    text = " ".join(compact) or "data movement"
    return text if len(text) <= 44 else text[:41] + "..."


def print_requests(found, outlined, flags):
    remarks = [line for line in outlined.stderr.splitlines() if "remark:" in line]
    print(f"dice-opt {' '.join(flags)}: {len(found)} kernel requests, "
          f"{len(remarks)} ops left outside\n")
    print(f"  {'#':>2}  {'kernel':<18}  level  {'computes':<44}  inputs -> outputs")
    for i, request in enumerate(found, 1):
        program = request["program"]
        n = len(program["inputs"])
        outputs = [program["ops"][o - n]["type"] if o >= n else program["inputs"][o]
                   for o in program["outputs"]]
        print(f"  {i:>2}  k_{request['fingerprint']:<16}  {request['level']:>5}  "
              f"{summary(program):<44}  {shapes(program['inputs'])} -> {shapes(outputs)}")
    for remark in remarks:
        print(f"  left outside: {remark.split('remark: ', 1)[1]}")


def candidate_line(candidate):
    verdict = candidate["verdict"]
    status = candidate["status"]
    if status == "accepted" and verdict.get("speedup"):
        return f"accepted, {verdict['speedup']:.2f}x"
    reason = first_line(verdict.get("reason"), 70)
    # Said once for the run, above.
    if status == "unverified" and reason.startswith("no CUDA device"):
        reason = "built and analysed, not run"
    return f"{status}: {reason}" if reason else status


def print_outcomes(found, report, remarks, database, model):
    print("\n".join(f"  {line}" for line in report))
    notes = [r.split("dice-verify: ", 1)[1] for r in remarks if r.startswith("dice-verify: ")]
    for note in notes:
        print(f"\nverifier: {note}")
    stored = [c for c in stored_candidates(database) if c["model"] == model]
    outcomes = {line.split()[0]: line for line in report[1:]}
    print("\nper request:")
    for request in found:
        fp = request["fingerprint"]
        mine = [c for c in stored if c["fingerprint"] == fp]
        row = outcomes.get(fp[:12], "")
        result = ("kernel @k_" + fp if "@k_" in row else "original ops")
        what = "; ".join(candidate_line(c) for c in mine) or "no candidates"
        print(f"  k_{fp[:12]}  {summary(request['program']):<28}  {what} -> {result}")


def compile_example(args):
    find_tool("dice-plan")
    module, inputs = examples.build(args.example)
    mlir = export_linalg_on_tensors(module, inputs, func_name=args.example)
    print(f"example '{args.example}': exported with torch-mlir "
          f"({len(mlir.splitlines())} lines of linalg-on-tensors)")
    replay = KERNELS_DIR / f"{args.example}.jsonl"
    if not replay.exists():
        sys.exit(f"error: no candidate kernels for '{args.example}' ({replay}); "
                 "write them with python/dice/example_kernels/make_replay.py")

    flags = [f"--dice-outline=granularity={args.granularity}", "--dice-scaffold"]
    with tempfile.TemporaryDirectory(prefix="dice-example-") as tmp:
        tmp = Path(tmp)
        source = tmp / f"{args.example}.mlir"
        source.write_text(mlir)
        found, outlined = requests(source, args.granularity)
        print_requests(found, outlined, flags)

        # The scaffolds' reference programs must compute what the model does.
        plan = plan_of(outlined.stdout)
        torch.manual_seed(1)
        fresh = [torch.randn_like(x) for x in inputs]
        with torch.no_grad():
            expected = module(*fresh)
        got = run_plan(plan, fresh)[0]
        error = ((got - expected).abs().max() / expected.abs().max()).item()
        print(f"\nreference programs vs PyTorch on fresh inputs: max relative error {error:.1e}")

        # The whole pipeline, candidates replayed from the example's file. The
        # database is this run's; kernel builds are cached under .dice/ so a
        # second run does not rebuild them.
        database = tmp / "kernels.db"
        builds = Path(os.environ.get("DICE_EXAMPLE_CACHE", SOURCE_ROOT / ".dice" / "example"))
        config = tmp / "dice.toml"
        write_config(config, database, builds)
        engine = f"replay:{replay}"
        print(f"\ndice-opt --dice-pipeline=\"granularity={args.granularity} "
              f"engine=replay:{replay.relative_to(SOURCE_ROOT) if replay.is_relative_to(SOURCE_ROOT) else replay} "
              f"jobs={args.jobs}\" --dice-report=-\n")
        proc = compile_pipeline(source, config, engine, tmp / "artifacts", jobs=args.jobs,
                                granularity=args.granularity,
                                extra=[f"nvcc={args.nvcc}"] if args.nvcc else [])
        report, remarks = report_and_remarks(proc)
        print_outcomes(found, report, remarks, database, f"replay:{replay.name}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m dice", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    compile_parser = sub.add_parser("compile", help="compile an example program")
    compile_parser.add_argument("--example", default="convnet", choices=sorted(examples.EXAMPLES))
    compile_parser.add_argument("--granularity", default="fusion",
                                choices=["op", "fusion", "function"])
    compile_parser.add_argument("--jobs", type=int, default=2,
                                help="kernel library builds at once")
    compile_parser.add_argument("--nvcc", help="nvcc to build candidates with")
    args = parser.parse_args(argv)
    return compile_example(args)


if __name__ == "__main__":
    sys.exit(main())
