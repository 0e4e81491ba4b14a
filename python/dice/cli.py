"""`dice`: compile a PyTorch program with dice-opt.

    dice compile FILE.py               # KernelBench format: Model, get_inputs, get_init_inputs
    dice compile MODULE:FACTORY        # FACTORY() -> (module, inputs), or a module + get_inputs
    dice compile --example convnet     # a built-in example
    dice bench tasks DIR               # every KernelBench-format task of DIR, measured
    dice train prepare|tokenizer|plot  # task packs, tokenizer and plots for dice-train
    dice corpus generate OUT_DIR       # PyTorch/CUDA training pairs (docs/corpus.md)
    dice curate run PAIRS.jsonl --out DIR  # pairs through the verifier (docs/curate.md)

Exports the program with torch-mlir (linalg-on-tensors), prints its kernel
requests, checks their reference programs against PyTorch, then runs the
whole `--dice-pipeline` (outline, scaffold, infill, verify, resolve, lower)
and prints the report and what happened to each request's candidates. The
candidates come from `--engine`: by default the DICE model, the
configuration's or, with none named, the one shipped in model/default; a
replay file of recorded kernels; or none, when the program keeps its
original ops.
"""

import argparse
import os
import sys
import tempfile
from pathlib import Path

import torch

from dice import examples
from dice.corpus.cli import add_corpus_parser
from dice.curate.cli import add_curate_parser
from dice.decompositions import corrected_python_kernels
from dice.errors import DiceError, ToolFailed
from dice.model_import import add_model_parser
from dice.pipeline import (SOURCE_ROOT, compile_pipeline, find_tool, first_line, op_names,
                           plan_of, read_report, report_table, requests, write_config)
from dice.plan import run_plan
from dice.programs import Program, load_program, python_identifier
from dice.torch_mlir_import import export_linalg_on_tensors
from dice.train.cli import add_train_parser

KERNELS_DIR = Path(__file__).resolve().parent / "example_kernels"


def shapes(types):
    return " ".join("x".join(map(str, t["shape"])) or "scalar" for t in types)


def summary(program):
    """The torch-level ops a request computes, without the reshapes."""
    fns = op_names(program)
    compact = []
    for fn in fns:
        if not compact or compact[-1] != fn:
            compact.append(fn)
    text = " ".join(compact) or "data movement"
    return text if len(text) <= 44 else text[:41] + "..."


def print_requests(found, outlined, flags):
    print(f"dice-opt {' '.join(flags)}: {len(found)} kernel requests, "
          f"{len(outlined.remarks)} ops left outside\n")
    print(f"  {'#':>2}  {'kernel':<18}  level  {'computes':<44}  inputs -> outputs")
    for i, request in enumerate(found, 1):
        program = request["program"]
        n = len(program["inputs"])
        outputs = [program["ops"][o - n]["type"] if o >= n else program["inputs"][o]
                   for o in program["outputs"]]
        print(f"  {i:>2}  k_{request['fingerprint']:<16}  {request['level']:>5}  "
              f"{summary(program):<44}  {shapes(program['inputs'])} -> {shapes(outputs)}")
    for remark in outlined.remarks:
        print(f"  left outside: {remark}")


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


def print_outcomes(found, table, report):
    print("\n".join(f"  {line}" for line in table))
    notes = [r.split("dice-verify: ", 1)[1] for r in report["remarks"]
             if r.startswith("dice-verify: ")]
    for note in notes:
        print(f"\nverifier: {note}")
    resolved = {r["fingerprint"]: r for r in report["requests"]}
    print("\nper request:")
    for request in found:
        fp = request["fingerprint"]
        row = resolved.get(fp, {"candidates": [], "kernel": None})
        result = f"kernel @{row['kernel']}" if row["kernel"] else "original ops"
        what = "; ".join(candidate_line(c) for c in row["candidates"]) or "no candidates"
        print(f"  k_{fp[:12]}  {summary(request['program']):<28}  {what} -> {result}")


def max_relative_error(got, expected):
    """Over every output: max |got - expected| / max |expected|."""
    got = got if isinstance(got, (list, tuple)) else [got]
    expected = expected if isinstance(expected, (list, tuple)) else [expected]
    if len(got) != len(expected):
        raise DiceError(f"the plan returns {len(got)} outputs, the program {len(expected)}")
    worst = 0.0
    for g, e in zip(got, expected):
        scale = e.abs().max().item() if e.numel() else 0.0
        diff = (g.double() - e.double()).abs().max().item() if e.numel() else 0.0
        worst = max(worst, diff / scale if scale else diff)
    return worst


def exported(program, func_name, export_cache):
    """(linalg-on-tensors text, how it was had): exported with torch-mlir,
    recorded in `export_cache` (a folder) when one is named; where torch-mlir
    is not installed, read from it (dice/export_cache.py). The cache's key
    is the program's graph as torch.export captures it, its weights'
    values and its inputs' shapes and dtypes, not their device."""
    def export():
        return export_linalg_on_tensors(program.module, program.inputs, func_name=func_name)

    if export_cache is None:
        return export(), "exported with torch-mlir"
    from dice.export_cache import ExportCache, ExportCacheMiss, torch_mlir_available
    with corrected_python_kernels():
        graph = torch.export.export(program.module, tuple(program.inputs), strict=False).module()
    how = (f"exported with torch-mlir, recorded in {export_cache}" if torch_mlir_available()
           else f"export read from {export_cache}")
    try:
        return ExportCache(export_cache).export(graph, program.inputs, export), how
    except ExportCacheMiss as e:
        raise DiceError(str(e)) from None


def check_reference_programs(program, outlined_mlir):
    """Runs the function as its plan (requests and the ops between them as
    reference programs) against the module on fresh inputs and prints the
    largest relative error; where the function does not plan as a whole
    (an op outside the requests whose shape depends on the data), says why
    and goes on: the requests are compiled all the same."""
    try:
        plan = plan_of(outlined_mlir)
    except ToolFailed as e:
        why = next((line.split("error: ", 1)[1] for line in e.stderr.splitlines()
                    if "error: " in line), first_line(e.stderr))
        print(f"\nreference programs not checked against PyTorch: the function does not "
              f"plan as a whole ({why})")
        return
    torch.manual_seed(1)
    fresh = [torch.randn_like(x) if isinstance(x, torch.Tensor) and x.is_floating_point()
             else x for x in program.inputs]
    with torch.no_grad():
        expected = program.module(*fresh)
    got = run_plan(plan, fresh)
    print("\nreference programs vs PyTorch on fresh inputs: max relative error "
          f"{max_relative_error(got, expected):.1e}")


def compile_program(program, args, engine):
    """Everything `dice compile` prints, for one Program; `engine` may be None."""
    find_tool("dice-plan")
    func_name = python_identifier(program.name)
    mlir, how = exported(program, func_name, args.export_cache)
    print(f"'{program.name}': {how} ({len(mlir.splitlines())} lines of linalg-on-tensors)")

    flags = [f"--dice-outline=granularity={args.granularity}", "--dice-scaffold"]
    with tempfile.TemporaryDirectory(prefix="dice-compile-") as tmp:
        tmp = Path(tmp)
        source = tmp / f"{func_name}.mlir"
        source.write_text(mlir)
        found, outlined = requests(source, args.granularity)
        print_requests(found, outlined, flags)

        check_reference_programs(program, outlined.ir)

        if engine == "none":
            print("\nengine 'none': no candidates, every request keeps its original ops")
            return 0

        # The whole pipeline. Without --config the database is this run's;
        # kernel builds are cached under .dice/ so a second run does not
        # rebuild them.
        config = args.config
        if config is None:
            database = tmp / "kernels.db"
            builds = Path(os.environ.get("DICE_EXAMPLE_CACHE", SOURCE_ROOT / ".dice" / "example"))
            config = tmp / "dice.toml"
            write_config(config, database, builds)
        print(f"\ndice-opt --dice-pipeline=\"granularity={args.granularity} "
              f"engine={engine} jobs={args.jobs}\" --dice-report=-\n")
        # The pipeline goes on from the outlined IR: its outline finds the
        # requests formed and its scaffold keeps their scaffolds.
        outlined_source = tmp / "outlined.mlir"
        outlined_source.write_text(outlined.ir)
        proc = compile_pipeline(outlined_source, config, engine, tmp / "artifacts",
                                tmp / "report.json",
                                jobs=args.jobs, granularity=args.granularity,
                                extra=[f"nvcc={args.nvcc}"] if args.nvcc else [])
        print_outcomes(found, report_table(proc), read_report(tmp / "report.json"))
    return 0


def compile_command(args):
    if (args.program is None) == (args.example is None):
        raise DiceError("name one program: FILE.py, MODULE:FACTORY or --example NAME")
    if args.example is not None:
        module, inputs = examples.build(args.example)
        program = Program(args.example, module, tuple(inputs))
        engine = args.engine or "model"
        if engine == "replay":
            # The example's hand-written kernels.
            replay = KERNELS_DIR / f"{args.example}.jsonl"
            if not replay.exists():
                raise DiceError(f"no recorded kernels for '{args.example}' ({replay}); "
                                "write them with python/dice/example_kernels/make_replay.py")
            engine = f"replay:{replay}"
    else:
        # Built under KernelBench's seed, as `dice bench tasks` builds it: the
        # same weights and inputs every run, so a recorded export (whose
        # weights are constants) is found again.
        torch.manual_seed(42)
        program = load_program(args.program)
        engine = args.engine or "model"
        if engine == "replay":
            raise DiceError("--engine replay (the recorded kernels) is for --example only; "
                            "name a file: --engine replay:FILE.jsonl")
    return compile_program(program, args, engine)


def bench_tasks_command(args):
    from dice.bench import BenchOptions, run_bench
    from dice.bench.report import markdown_summary
    opts = BenchOptions(
        folder=Path(args.folder), out=Path(args.out),
        granularities=tuple(dict.fromkeys(args.granularity or ["function", "fusion"])),
        device=args.device, engine=args.engine, config=args.config, jobs=args.jobs,
        export_cache=args.export_cache,
        trials=args.trials, runs=args.runs, atol=args.atol, rtol=args.rtol,
        limit=args.limit, name_filter=args.filter, progress=not args.no_progress)
    run = run_bench(opts)
    print(markdown_summary(run))
    print("wrote " + ", ".join(str(path) for path in run.files.values()))
    return 0


def record_exports_command(args):
    from dice.bench.record_exports import record_exports

    def progress(recorded):
        print(f"\rrecorded {recorded.exported} exports of {recorded.graphs} graphs "
              f"({recorded.tasks} tasks)", end="", file=sys.stderr, flush=True)

    recorded = record_exports(Path(args.folder), Path(args.export_cache), args.filter,
                              args.limit, progress)
    print(file=sys.stderr)
    for task, why in recorded.skipped:
        print(f"{task}: not recorded: {why}")
    print(f"{recorded.exported} exports of {recorded.graphs} graphs from {recorded.tasks} "
          f"tasks in {args.export_cache}")
    return 0


def positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: expected a positive number")
    return value


def add_bench_parser(sub):
    bench = sub.add_parser("bench", help="measure dice on a set of programs")
    bench_sub = bench.add_subparsers(dest="bench_command", required=True)
    tasks = bench_sub.add_parser(
        "tasks", help="every KernelBench-format task of a folder through "
                      "torch.compile(backend=\"dice\"), against eager and Inductor")
    tasks.add_argument("folder", help="the tasks' folder (searched recursively)")
    tasks.add_argument("--out", default="bench-results",
                       help="where eval_results.json, summary.json, results.md and "
                            "speedups.png go")
    tasks.add_argument("--granularity", action="append", choices=["function", "fusion"],
                       help="repeatable; default: function and fusion")
    tasks.add_argument("--device", choices=["cuda", "cpu"],
                       help="default: cuda when there is one")
    tasks.add_argument("--engine", help="model (the default: the config's model, else the "
                       "shipped one), model:DIR, replay:FILE.jsonl or none")
    tasks.add_argument("--config", help="a dice.toml (database, model, verifier)")
    tasks.add_argument("--jobs", type=positive, default=2, help="kernel library builds at once")
    tasks.add_argument("--export-cache", metavar="DIR",
                       help="torch-mlir's exports: recorded here where torch-mlir is "
                            "installed, read from here where it is not "
                            "(default: $DICE_EXPORT_CACHE; docs/gpu-node.md)")
    tasks.add_argument("--trials", type=positive, default=5,
                       help="correctness trials, each on fresh inputs")
    tasks.add_argument("--runs", type=positive, default=100, help="timed runs per measurement")
    tasks.add_argument("--atol", type=float, default=1e-2)
    tasks.add_argument("--rtol", type=float, default=1e-2)
    tasks.add_argument("--limit", type=positive, help="the first N tasks only")
    tasks.add_argument("--filter", help="only tasks whose name holds this")
    tasks.add_argument("--no-progress", action="store_true", help="no progress bar")
    tasks.set_defaults(run=bench_tasks_command)
    record = bench_sub.add_parser(
        "record-exports", help="record torch-mlir's export of every graph of a folder's "
                               "tasks, for `bench tasks --export-cache` where torch-mlir "
                               "is not installed (docs/gpu-node.md)")
    record.add_argument("folder", help="the tasks' folder (searched recursively)")
    record.add_argument("--export-cache", metavar="DIR", required=True,
                        help="where the exports go")
    record.add_argument("--limit", type=positive, help="the first N tasks only")
    record.add_argument("--filter", help="only tasks whose name holds this")
    record.set_defaults(run=record_exports_command)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="dice", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    compile_parser = sub.add_parser(
        "compile", help="compile a PyTorch program and say what happened to each kernel request")
    compile_parser.add_argument("program", nargs="?",
                                help="FILE.py (KernelBench format), FILE.py:FACTORY or "
                                     "MODULE:FACTORY")
    compile_parser.add_argument("--example", choices=sorted(examples.EXAMPLES),
                                help="a built-in example instead")
    compile_parser.add_argument("--engine",
                                help="where candidates come from: model (the default: "
                                     "dice.toml's model, else the shipped model/default), "
                                     "model:DIR, replay:FILE.jsonl, replay (an example's "
                                     "hand-written kernels) or none")
    compile_parser.add_argument("--config", help="a dice.toml (database, model, verifier)")
    compile_parser.add_argument("--granularity", default="fusion",
                                choices=["op", "fusion", "function"])
    compile_parser.add_argument("--jobs", type=int, default=2,
                                help="kernel library builds at once")
    compile_parser.add_argument("--nvcc", help="nvcc to build candidates with")
    compile_parser.add_argument("--export-cache", metavar="DIR",
                                default=os.environ.get("DICE_EXPORT_CACHE") or None,
                                help="torch-mlir's export: recorded here where torch-mlir "
                                     "is installed, read from here where it is not "
                                     "(default: $DICE_EXPORT_CACHE; docs/gpu-node.md)")
    compile_parser.set_defaults(run=compile_command)
    add_bench_parser(sub)
    add_train_parser(sub)
    add_corpus_parser(sub)
    add_curate_parser(sub)
    add_model_parser(sub)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except DiceError as e:
        print(f"dice: error: {e}", file=sys.stderr)
        return 1
