"""python -m dice: compile an example PyTorch program with dice-opt.

    python -m dice compile [--example convnet] [--granularity fusion]

Exports the program with torch-mlir (linalg-on-tensors), runs dice-opt on it
and prints what happened to each kernel request.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from dice import examples
from dice.torch_mlir_import import export_linalg_on_tensors

SOURCE_ROOT = Path(__file__).resolve().parents[2]


def find_dice_opt():
    build = Path(os.environ.get("DICE_BUILD_DIR", SOURCE_ROOT / "build"))
    path = build / "bin" / "dice-opt"
    if not path.exists():
        sys.exit(f"error: no dice-opt at {path}; run scripts/setup.sh first")
    return path


def available_passes(dice_opt):
    help_text = subprocess.run([dice_opt, "--help"], capture_output=True,
                               text=True, check=True).stdout
    return set(re.findall(r"--(dice-[a-z-]+)", help_text))


def compile_example(args):
    dice_opt = find_dice_opt()
    module, inputs = examples.build(args.example)
    print(f"exporting example '{args.example}' with torch-mlir (linalg-on-tensors)")
    mlir = export_linalg_on_tensors(module, inputs, func_name=args.example)
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp, f"{args.example}.mlir")
        source.write_text(mlir)
        passes = available_passes(dice_opt)
        pipeline = []
        if "dice-outline" in passes:
            pipeline.append(f"--dice-outline=granularity={args.granularity}")
        proc = subprocess.run([dice_opt, source, *pipeline], capture_output=True,
                              text=True)
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr)
            return proc.returncode
    ops = re.findall(r"= (linalg\.[a-z_0-9]+)", proc.stdout)
    print(f"dice-opt parsed {len(mlir.splitlines())} lines: {len(ops)} linalg ops "
          f"({', '.join(sorted(set(ops)))})")
    requests = re.findall(r'dice\.kernel_request "([0-9a-f]+)" level\((\d)\)', proc.stdout)
    if not pipeline:
        print("kernel requests: none formed; this dice-opt has no dice-outline pass")
        return 0
    print(f"kernel requests: {len(requests)}")
    for fingerprint, level in requests:
        print(f"  k_{fingerprint}  level {level}")
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
