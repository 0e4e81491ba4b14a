"""Writes the reference program of every corpus kernel that names what it
computes (labels.json: `computes`, `inputs`, `dtype`) into programs/.

The programs come from the real front end, not by hand: the expression is
a PyTorch module, exported with torch-mlir, outlined at function
granularity and scaffolded by dice-opt, and planned by dice-plan; the
request's program is what the verifier checks the kernel against. An
expression without compute (`x0`) has no request and gets the identity
program. `--check` fails when a committed program differs.

    .venv/bin/python test/verifier/corpus/make_programs.py [--build build] [--check]
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

import torch

CORPUS = Path(__file__).resolve().parent
ROOT = CORPUS.parents[2]
sys.path.insert(0, str(ROOT / "python"))

from dice.torch_mlir_import import export_linalg_on_tensors  # noqa: E402


class Expression(torch.nn.Module):
    def __init__(self, source, arity):
        super().__init__()
        self.source = source
        self.arity = arity

    def forward(self, *xs):
        names = {f"x{i}": x for i, x in enumerate(xs)}
        return eval(self.source, {"torch": torch}, names)


def run(tool, *args, stdin=None):
    proc = subprocess.run([str(tool), *args], input=stdin, capture_output=True,
                          text=True, timeout=300)
    if proc.returncode:
        raise RuntimeError(f"{tool.name} failed:\n{proc.stderr}")
    return proc.stdout


def program_for(entry, bin_dir):
    dtype = getattr(torch, entry["dtype"])
    inputs = [torch.randn(shape, dtype=dtype) for shape in entry["inputs"]]
    described = [{"shape": list(shape), "dtype": entry["dtype"]} for shape in entry["inputs"]]
    if entry["computes"].strip() == "x0":
        return {"inputs": described, "ops": [], "outputs": [0]}
    module = Expression(entry["computes"], len(inputs))
    mlir = export_linalg_on_tensors(module, inputs, func_name="candidate")
    outlined = run(bin_dir / "dice-opt", "--dice-outline=granularity=function",
                   "--dice-scaffold", stdin=mlir)
    plan = json.loads(run(bin_dir / "dice-plan", stdin=outlined))
    requests = [s for s in plan["steps"] if "request" in s]
    if len(requests) != 1:
        raise RuntimeError(f"{entry['computes']}: {len(requests)} requests, want 1")
    step, program = requests[0], requests[0]["program"]
    # The request takes the function's arguments in the order the region
    # first uses them; the kernel takes them as x0, x1, ...: renumber.
    order = step["args"]
    if sorted(order) != list(range(len(inputs))):
        raise RuntimeError(f"{entry['computes']}: request operands {order} "
                           "are not the inputs")
    n = len(order)
    renumber = lambda v: order[v] if v < n else v
    program["inputs"] = [program["inputs"][order.index(i)] for i in range(n)]
    for op in program["ops"]:
        op["args"] = [renumber(v) for v in op["args"]]
    program["outputs"] = [renumber(v) for v in program["outputs"]]
    return program


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    bin_dir = Path(args.build) / "bin"
    labels = json.loads((CORPUS / "labels.json").read_text())
    stale = []
    for name, entry in sorted(labels.items()):
        if "computes" not in entry:
            continue
        text = json.dumps(program_for(entry, bin_dir), sort_keys=True) + "\n"
        path = CORPUS / "programs" / (Path(name).stem + ".json")
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(path.name)
        else:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        sys.exit("stale programs (rerun make_programs.py): " + ", ".join(stale))


if __name__ == "__main__":
    main()
