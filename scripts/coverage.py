#!/usr/bin/env python3
"""The front end's coverage suite: every program of test/coverage/programs/
through export, dice-opt at three granularities, dice-plan and both
reference backends, written up as docs/coverage.md and docs/coverage.json.

    .venv/bin/python scripts/coverage.py [--quick] [--only NAME ...] [--out DIR]
                                         [--exports DIR]

--quick runs the first program of each family (static, and dynamic batch
where flagged). --exports keeps each export's MLIR as DIR/<name>-<mode>.mlir
(for scripts/test-memcheck.sh). DICE_BUILD_DIR selects the tools (default:
build/).
"""

import argparse
import datetime
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "python"), str(ROOT / "test" / "coverage")]

MAX_JOBS = 2  # the machines this runs on share two cores
TOOLS = ("dice-opt", "dice-plan", "dice-reference-run")


def _init_worker():
    import torch

    torch.set_num_threads(1)
    import torch_mlir.fx  # noqa: F401 (imported once per worker, not per program)


def _measure(task):
    import measure
    import programs

    name, mode, bin_dir, exports = task
    program = programs.load()[name]
    try:
        return measure.measure(program, mode, Path(bin_dir),
                               exports=Path(exports) if exports else None)
    except Exception as e:  # recorded, so that one program cannot stop the suite
        return {"name": name, "family": program.family, "mode": mode, "granularities": {},
                "export_error": f"coverage script: {type(e).__name__}: {e}".splitlines()[0]}


def tasks(selected, bin_dir, exports=None):
    out = []
    for p in selected:
        out.append((p.name, "static", str(bin_dir), exports and str(exports)))
        if p.dynamic is not None:
            out.append((p.name, "dynamic", str(bin_dir), exports and str(exports)))
    return out


def git_head(path):
    proc = subprocess.run(["git", "-C", str(path), "rev-parse", "--short=12", "HEAD"],
                          capture_output=True, text=True)
    return proc.stdout.strip() or "unknown"


def build_source(build):
    cache = build / "CMakeCache.txt"
    if cache.exists():
        for line in cache.read_text().splitlines():
            if line.startswith("CMAKE_HOME_DIRECTORY:"):
                return Path(line.split("=", 1)[1])
    return build


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one program per family")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="these programs only")
    parser.add_argument("--out", type=Path, default=ROOT / "docs",
                        help="where coverage.md and coverage.json go (default: docs/)")
    parser.add_argument("--jobs", type=int, default=MAX_JOBS, help=f"at most {MAX_JOBS}")
    parser.add_argument("--exports", type=Path, metavar="DIR",
                        help="also write each export's MLIR here")
    args = parser.parse_args(argv)

    import programs
    import report
    from tqdm import tqdm

    build = Path(os.environ.get("DICE_BUILD_DIR", ROOT / "build")).resolve()
    bin_dir = build / "bin"
    for tool in TOOLS:
        if not (bin_dir / tool).exists():
            parser.error(f"no {tool} in {bin_dir} (set DICE_BUILD_DIR to a build tree)")
    all_programs = programs.load()
    if args.only:
        unknown = sorted(set(args.only) - set(all_programs))
        if unknown:
            parser.error(f"unknown programs: {', '.join(unknown)}")
        selected = [all_programs[n] for n in args.only]
    elif args.quick:
        firsts = {}
        for p in all_programs.values():
            firsts.setdefault(p.family, p)
        selected = list(firsts.values())
    else:
        selected = list(all_programs.values())

    started = time.monotonic()
    jobs = max(1, min(args.jobs, MAX_JOBS))
    with tempfile.TemporaryDirectory(prefix="coverage-tools-") as snapshot:
        # A copy of the tools: a rebuild of the tree during the run must not
        # mix two builds' results (or fail an exec while the linker writes).
        for tool in TOOLS:
            shutil.copy2(bin_dir / tool, Path(snapshot) / tool)
        built = datetime.datetime.fromtimestamp((bin_dir / "dice-opt").stat().st_mtime,
                                                datetime.timezone.utc)
        if args.exports:
            args.exports.mkdir(parents=True, exist_ok=True)
        work = tasks(selected, snapshot, args.exports and args.exports.resolve())
        with multiprocessing.get_context("spawn").Pool(jobs, initializer=_init_worker) as pool:
            records = list(tqdm(pool.imap_unordered(_measure, work), total=len(work),
                                desc="coverage", unit="export", file=sys.stderr))
    order = {(n, m): i for i, (n, m, _, _) in enumerate(work)}
    records.sort(key=lambda r: order[(r["name"], r["mode"])])
    seconds = time.monotonic() - started

    families = [f for f in programs.FAMILIES if any(p.family == f for p in selected)]
    summary = report.summarise(records, families)
    source = build_source(build)
    meta = {"commit": git_head(ROOT), "build": str(build), "build_source": str(source),
            "build_commit": git_head(source), "built": built.strftime("%Y-%m-%d %H:%M UTC"),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "seconds": seconds, "minutes": seconds / 60, "jobs": jobs,
            "worker_seconds": sum(r.get("seconds", 0) for r in records)}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "coverage.json").write_text(json.dumps(
        {"meta": meta, "summary": summary, "records": records}, indent=1) + "\n")
    (args.out / "coverage.md").write_text(report.markdown(summary, records, meta))
    totals = summary["totals"]["static"]
    print(f"{len(records)} exports of {len(selected)} programs in {seconds:.0f} s; static: "
          f"{totals['all_inside_fusion']}/{totals['programs']} all compute inside at fusion, "
          f"{totals['faithful']}/{totals['programs']} faithful; wrote {args.out}/coverage.md",
          file=sys.stderr)


if __name__ == "__main__":
    main()
