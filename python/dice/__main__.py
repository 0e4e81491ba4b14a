"""python -m dice: compile an example PyTorch program with dice-opt.

    python -m dice compile [--example convnet] [--granularity fusion]

Exports the program with torch-mlir (linalg-on-tensors), runs the dice
passes this build has on it and prints what happened to each kernel request.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

from dice import examples
from dice.plan import run_plan
from dice.torch_mlir_import import export_linalg_on_tensors

SOURCE_ROOT = Path(__file__).resolve().parents[2]
PIPELINE = ("dice-outline", "dice-scaffold")


def find_tool(name):
    build = Path(os.environ.get("DICE_BUILD_DIR", SOURCE_ROOT / "build"))
    path = build / "bin" / name
    if not path.exists():
        sys.exit(f"error: no {name} at {path}; run scripts/setup.sh first")
    return path


def run(cmd, stdin=None):
    proc = subprocess.run([str(c) for c in cmd], input=stdin, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        sys.exit(proc.returncode)
    return proc


def available_passes(dice_opt):
    help_text = run([dice_opt, "--help"]).stdout
    return set(re.findall(r"--(dice-[a-z-]+)", help_text))


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


def compile_example(args):
    dice_opt, dice_plan = find_tool("dice-opt"), find_tool("dice-plan")
    module, inputs = examples.build(args.example)
    mlir = export_linalg_on_tensors(module, inputs, func_name=args.example)
    print(f"example '{args.example}': exported with torch-mlir "
          f"({len(mlir.splitlines())} lines of linalg-on-tensors)")

    missing = [p for p in PIPELINE if p not in available_passes(dice_opt)]
    if missing:
        sys.exit(f"error: this dice-opt lacks {', '.join(missing)}")
    flags = [f"--dice-outline=granularity={args.granularity}", "--dice-scaffold"]
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp, f"{args.example}.mlir")
        source.write_text(mlir)
        outlined = run([dice_opt, source, *flags])
    remarks = [line for line in outlined.stderr.splitlines() if "remark:" in line]
    plan = json.loads(run([dice_plan], stdin=outlined.stdout).stdout)
    requests = [s for s in plan["steps"] if "request" in s]
    print(f"dice-opt {' '.join(flags)}: {len(requests)} kernel requests, "
          f"{len(remarks)} ops left outside\n")

    print(f"  {'#':>2}  {'kernel':<18}  level  {'computes':<44}  inputs -> outputs")
    for i, step in enumerate(requests, 1):
        program = step["program"]
        print(f"  {i:>2}  k_{step['request']:<16}  {step['level']:>5}  "
              f"{summary(program):<44}  {shapes(program['inputs'])} -> "
              f"{shapes([program['ops'][o - len(program['inputs'])]['type'] if o >= len(program['inputs']) else program['inputs'][o] for o in program['outputs']])}")
    for remark in remarks:
        print(f"  left outside: {remark.split('remark: ', 1)[1]}")

    # The scaffolds' reference programs must compute what the model does.
    torch.manual_seed(1)
    fresh = [torch.randn_like(x) for x in inputs]
    with torch.no_grad():
        expected = module(*fresh)
    got = run_plan(plan, fresh)[0]
    error = ((got - expected).abs().max() / expected.abs().max()).item()
    print(f"\nreference programs vs PyTorch on fresh inputs: max relative error {error:.1e}")
    print("each request: scaffolded (reference program, prefix, suffix, prompts); "
          "no candidate kernels:\nthis build has no infill engine or verifier "
          "yet, so every request keeps its default lowering")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m dice", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    compile_parser = sub.add_parser("compile", help="compile an example program")
    compile_parser.add_argument("--example", default="convnet", choices=sorted(examples.EXAMPLES))
    compile_parser.add_argument("--granularity", default="fusion",
                                choices=["op", "fusion", "function"])
    args = parser.parse_args(argv)
    return compile_example(args)


if __name__ == "__main__":
    sys.exit(main())
