#!/usr/bin/env python3
"""Export the models of models.py to linalg-on-tensors MLIR with torch-mlir.

    python test/torch_models/export.py --out test/Inputs/torch-mlir [--only NAME ...]
    python test/torch_models/export.py --out test/Inputs/torch-mlir --check

The first form (re)writes `<out>/<name>.mlir` for each model. `--check`
exports into a temporary directory instead and compares byte for byte with
the files in `--out`; it exits non-zero naming every stale, missing or
orphaned file.

torch-mlir is built on a newer LLVM than the compiler's MLIR 22, so the two
exchange MLIR as text only (no bytecode, no shared Python bindings). The text
printed by torch-mlir 20261001 for these models parses unchanged with
MLIR 22, so no normalisation is applied (see `normalise`). After writing,
each file is parsed with dice-opt when one is found (`--dice-opt`, else
`$DICE_BUILD_DIR/bin/dice-opt`); the exports in
`models.UNKNOWN_DIALECT_OPS` hold ops of a dialect MLIR 22 lacks, printed
in generic form, which dice-opt reads all the same.

Pinned versions (docs/dependencies.md): torch 2.11.0, torch-mlir 20261001.
Other versions may print different IR, which `--check` reports as stale.
"""

import argparse
import difflib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE_ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(SOURCE_ROOT / "python"))

import models  # noqa: E402
from dice.torch_mlir_import import export_linalg_on_tensors  # noqa: E402

PINNED = {"torch": "2.11.0", "torch_mlir": "20261001"}
HEADER = (
    "// Exported from test/torch_models/models.py:{name} by "
    "test/torch_models/export.py; do not edit.\n"
)


def normalise(text):
    """Make torch-mlir's printed IR parseable by MLIR 22 without changing it.

    Nothing is needed for the pinned torch-mlir: every construct it prints
    for these models (dense_resource blobs in the `{-# dialect_resources #-}`
    trailer, linalg named ops, tensor.expand_shape with output_shape, f64 hex
    float literals, ...) is also accepted by MLIR 22, and dice-opt reprints
    the files identically. Only the trailing newline is made exact so that
    the output is stable.
    """
    return text.rstrip("\n") + "\n"


def installed_versions():
    from importlib.metadata import version

    import torch

    return {"torch": torch.__version__.split("+")[0], "torch_mlir": version("torch-mlir")}


def export_text(name):
    """Export model `name` and return the file contents (header included)."""
    module, inputs, options = models.MODELS[name]()
    mlir = export_linalg_on_tensors(module, inputs, func_name=name, **options)
    return HEADER.format(name=name) + normalise(mlir)


def find_dice_opt(explicit=None):
    if explicit:
        return Path(explicit)
    build = Path(os.environ.get("DICE_BUILD_DIR", SOURCE_ROOT / "build"))
    candidate = build / "bin" / "dice-opt"
    return candidate if candidate.exists() else None


def parse_problem(dice_opt, path, name):
    """Return None if `path` behaves as expected under dice-opt, else why not."""
    proc = subprocess.run(
        [str(dice_opt), str(path), "-o", os.devnull],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        return f"dice-opt rejects it:\n{proc.stderr}"
    dialect = models.UNKNOWN_DIALECT_OPS.get(name)
    if dialect and f'"{dialect}.' not in Path(path).read_text():
        return f"expected a generic-form {dialect} op in it"
    return None


def export_all(out_dir, names, dice_opt=None, verbose=True):
    """Write `<out_dir>/<name>.mlir` for `names`; return parse problems."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    problems = []
    for name in names:
        start = time.monotonic()
        path = out_dir / f"{name}.mlir"
        path.write_text(export_text(name))
        took = time.monotonic() - start
        problem = parse_problem(dice_opt, path, name) if dice_opt else None
        if problem:
            problems.append(f"{path}: {problem}")
        if verbose:
            status = "FAIL" if problem else ("ok" if dice_opt else "not parsed")
            print(f"{name:16} {path.stat().st_size:7d} B  {took:5.2f} s  {status}")
    return problems


def stale_files(committed_dir, names=None):
    """Export into a temp dir; return (stale, report) versus `committed_dir`.

    `stale` lists the file names that differ from, or are missing in,
    `committed_dir`, plus (when all models are checked) committed `.mlir`
    files that no model produces.
    """
    committed_dir = Path(committed_dir)
    all_models = names is None
    names = list(models.MODELS) if all_models else list(names)
    stale, report = [], []
    with tempfile.TemporaryDirectory() as tmp:
        export_all(tmp, names, verbose=False)
        for name in names:
            fresh = Path(tmp, f"{name}.mlir").read_text()
            committed = committed_dir / f"{name}.mlir"
            if not committed.exists():
                stale.append(committed.name)
                report.append(f"{committed}: missing")
                continue
            old = committed.read_text()
            if old != fresh:
                stale.append(committed.name)
                diff = difflib.unified_diff(
                    old.splitlines(True), fresh.splitlines(True),
                    str(committed), "fresh export", n=1,
                )
                # Resource blobs are single long lines: clip for readability.
                lines = [
                    line if len(line) <= 160 else line[:157] + "...\n"
                    for line in list(diff)[:40]
                ]
                report.append("".join(lines))
    if all_models:
        for orphan in sorted(committed_dir.glob("*.mlir")):
            if orphan.stem not in models.MODELS:
                stale.append(orphan.name)
                report.append(f"{orphan}: no model of that name in models.py")
    return stale, report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="directory of the .mlir files")
    parser.add_argument("--only", nargs="+", metavar="NAME", choices=list(models.MODELS),
                        help="models to export (default: all)")
    parser.add_argument("--check", action="store_true",
                        help="compare fresh exports with --out instead of writing")
    parser.add_argument("--dice-opt", help="dice-opt used to parse the written files")
    args = parser.parse_args(argv)

    versions = installed_versions()
    if versions != PINNED:
        print(f"warning: installed {versions} differ from the pinned {PINNED}; "
              "the output may differ from the committed files", file=sys.stderr)

    if args.check:
        stale, report = stale_files(args.out, args.only)
        if stale:
            print("\n".join(report), file=sys.stderr)
            print(f"stale exports in {args.out}: {', '.join(stale)}\n"
                  f"refresh with: python test/torch_models/export.py --out {args.out}",
                  file=sys.stderr)
            return 1
        print(f"all exports in {args.out} are up to date")
        return 0

    dice_opt = find_dice_opt(args.dice_opt)
    if dice_opt is None:
        print("note: no dice-opt found; the written files are not parsed", file=sys.stderr)
    problems = export_all(args.out, args.only or list(models.MODELS), dice_opt)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
