"""`dice corpus ...`: the PyTorch/CUDA training corpus.

    dice corpus generate OUT_DIR [--seed N] [--limit N] [--variants N]
    dice corpus check CORPUS.jsonl... [--build] [--all]
    dice corpus engine OUT_DIR --count N [--seed N] [--jobs N] [--packs]
    dice corpus engine-check CORPUS_DIR OUT.jsonl [--per-cell N] [--total N] [--build]
    dice corpus engine-reach PROGRAM.py|DIR... [--out REPORT.json]
"""

import sys


def generate_command(args):
    from dice.corpus.generate import generate
    rows = generate(args.out_dir, seed=args.seed, limit=args.limit, variants=args.variants)
    print(", ".join(f"{split}: {len(r)} rows" for split, r in rows.items())
          + f" -> {args.out_dir}", file=sys.stderr)
    return 0


def _reach_command(args):
    from dice.engine.reach import reach_command
    return reach_command(args)


def engine_command(args):
    from dice.engine.generate import generate
    from dice.pipeline import find_tool
    summary = generate(args.out_dir, args.count, seed=args.seed, jobs=args.jobs,
                       tool=find_tool("dice-scaffold-programs"), packs=args.packs)
    print(", ".join(f"{split}: {s['rows']} rows" for split, s in summary["splits"].items())
          + f" ({summary['count']} distinct requests of {summary['drawn']} drawn, "
          f"{summary['seconds']} s) -> {args.out_dir}", file=sys.stderr)
    return 0


def engine_check_command(args):
    from dice.engine.check import check
    rows, failed = check(args.corpus_dir, args.out, args.per_cell, total=args.total,
                         build=args.build, jobs=args.jobs,
                         families=args.families.split(",") if args.families else None)
    print(f"{rows - failed}/{rows} rows pass; per cell: "
          f"{args.out.rsplit('.', 1)[0]}.md", file=sys.stderr)
    return 1 if failed else 0


def check_command(args):
    from dice.corpus.check import PASSED, one_per_family, verify
    from dice.corpus.generate import read_jsonl
    rows = [row for path in args.corpus for row in read_jsonl(path)]
    if args.build and not args.all:
        rows = one_per_family(rows)
    verdicts = verify(rows, build=args.build, jobs=args.jobs)
    failed = 0
    for row, verdict in zip(rows, verdicts):
        ok = verdict["status"] in PASSED
        failed += not ok
        if not ok or args.verbose:
            print(f"{row['id']}: {verdict['status']}: {verdict.get('reason', '')}")
    print(f"{len(rows) - failed}/{len(rows)} rows pass "
          f"{'the analysis and nvcc' if args.build else 'the static analysis'}")
    return 1 if failed else 0


def add_corpus_parser(sub):
    """The `corpus` subcommand and its own subcommands, under `dice`."""
    from dice.cli import positive  # dice.cli imports this module first
    corpus = sub.add_parser("corpus", help="the generated PyTorch/CUDA training corpus")
    corpus_sub = corpus.add_subparsers(dest="corpus_command", required=True)
    generate = corpus_sub.add_parser(
        "generate", help="corpus rows, RL tasks and task packs, split train/val/heldout")
    generate.add_argument("out_dir")
    generate.add_argument("--seed", type=int, default=0)
    generate.add_argument("--limit", type=positive, help="the first N catalogue tasks only")
    generate.add_argument("--variants", type=positive, default=8,
                          help="tasks drawn per family (chains: ten times as many)")
    generate.set_defaults(run=generate_command)
    engine = corpus_sub.add_parser(
        "engine", help="the data engine: programs drawn from the grammar, their kernels "
        "and the compiler's scaffolds (docs/corpus.md)")
    engine.add_argument("out_dir")
    engine.add_argument("--count", type=positive, required=True,
                        help="distinct kernel requests (fingerprints) to write")
    engine.add_argument("--seed", type=int, default=0)
    engine.add_argument("--jobs", type=positive, default=1, help="processes drawing at once")
    engine.add_argument("--packs", action="store_true",
                        help="also write RL task packs (the prompts) per split")
    engine.set_defaults(run=engine_command)
    engine_check = corpus_sub.add_parser(
        "engine-check", help="dice-verify a stratified sample of engine rows: static "
        "analysis; --build the whole verifier on a GPU")
    engine_check.add_argument("corpus_dir")
    engine_check.add_argument("out", help="verdicts, one JSON line a row (and OUT.md)")
    engine_check.add_argument("--per-cell", type=positive, default=5,
                              help="rows of every emitter x dtype x shape class")
    engine_check.add_argument("--total", type=positive, help="then up to N rows in all")
    engine_check.add_argument("--build", action="store_true", help="nvcc and the GPU checks")
    engine_check.add_argument("--jobs", type=positive, default=2, help="nvcc processes at once")
    engine_check.add_argument("--families", help="only rows of these families (comma-separated)")
    engine_check.set_defaults(run=engine_check_command)
    engine_reach = corpus_sub.add_parser(
        "engine-reach", help="which of the programs' kernel requests the engine's emitters "
        "write, and the kinds of those they do not")
    engine_reach.add_argument("paths", nargs="+", help="PyTorch programs (KernelBench "
                              "format) and folders of them")
    engine_reach.add_argument("--out", help="the whole report as JSON")
    engine_reach.set_defaults(run=_reach_command)
    check = corpus_sub.add_parser(
        "check", help="dice-verify the rows: static analysis; --build also nvcc")
    check.add_argument("corpus", nargs="+")
    check.add_argument("--build", action="store_true",
                       help="also build with nvcc: one row per family unless --all")
    check.add_argument("--all", action="store_true", help="with --build: every row")
    check.add_argument("--jobs", type=positive, default=2, help="nvcc processes at once")
    check.add_argument("--verbose", action="store_true", help="a line for every row")
    check.set_defaults(run=check_command)
