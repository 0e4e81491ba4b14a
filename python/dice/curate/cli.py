"""`dice curate ...` (also `dice-curate ...`): PyTorch/CUDA pairs through
the verifier into CuKe-format data (docs/curate.md).

    dice curate prepare PAIRS.jsonl... --work DIR     # where the compiler is
    dice curate verify --work DIR [--threshold 2.0]   # on a GPU machine
    dice curate report --work DIR --out DIR           # anywhere
    dice curate run PAIRS.jsonl... --out DIR          # all three, on one machine
    dice curate times PACKS.jsonl... --out DIR        # a baseline_times file (GPU)
"""

import argparse
import sys
from pathlib import Path

from dice.errors import DiceError


def _fields(args):
    from dice.curate.pairs import Fields
    return Fields(args.pytorch_field, args.cuda_field, args.level_field, args.id_field,
                  args.level)


def prepare_command(args):
    from dice.curate.prepare import prepare
    read, ready, skipped = prepare(args.pairs, args.work, _fields(args), args.skip_bad,
                                   args.config)
    print(f"{ready} of {read} pairs ready to verify in {args.work}"
          + (f"; skipped {skipped} bad line(s)" if skipped else ""), file=sys.stderr)
    return 0


def verify_command(args):
    from dice.curate.verify import verify
    verdicts = verify(args.work, args.threshold, args.runs, args.inductor, args.jobs,
                      args.config)
    print(f"{len(verdicts)} verdict(s) in {args.work}", file=sys.stderr)
    return 0


def report_command(args):
    from dice.curate.report import report
    summary = report(args.work, args.out, args.threshold)
    print(f"kept {summary['kept']} of {summary['pairs']} pairs: "
          f"{Path(args.out) / 'curated.jsonl'}; report {Path(args.out) / 'report.md'}")
    return 0


class PackLineError(DiceError):
    def __init__(self, path, line, field, message):
        super().__init__(f"{path}:{line}: {message}")


def times_command(args):
    from dice.curate.measure import TIMES_FILE, measure
    from dice.jsonl import json_object_line, nonempty_lines
    lines = []
    for path in args.packs:
        for n, text in nonempty_lines(path):
            line = json_object_line(path, n, text, PackLineError)
            if not {"fingerprint", "pytorch_code"} <= line.keys():
                raise PackLineError(path, n, None, "needs fingerprint and pytorch_code "
                                                   "(a task pack or a prepared pair)")
            line.setdefault("id", f"{Path(path).stem}:{n}")
            lines.append(line)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    timed = measure(lines, args.out, args.runs, args.inductor)
    print(f"timed {timed} request(s): {Path(args.out) / TIMES_FILE}", file=sys.stderr)
    return 0


def run_command(args):
    args.work = args.work or str(Path(args.out) / "work")
    prepare_command(args)
    verify_command(args)
    return report_command(args)


def _positive_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got '{text}'") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value


def _add_pairs_options(p):
    from dice.cli import positive
    p.add_argument("pairs", nargs="+", help="pair JSONL files (CuKe shape by default)")
    p.add_argument("--skip-bad", action="store_true",
                   help="report lines that are no pair and go on, instead of stopping")
    p.add_argument("--pytorch-field", default="pytorch_code",
                   help="the field holding the PyTorch program (default: %(default)s)")
    p.add_argument("--cuda-field", default="cuda_code",
                   help="the field holding the CUDA program (default: %(default)s)")
    p.add_argument("--level-field", default="level", help="default: %(default)s")
    p.add_argument("--id-field", default="id", help="default: %(default)s")
    p.add_argument("--level", type=positive, choices=[1, 2, 3],
                   help="the level of rows that have no level field")


def _add_verify_options(p):
    from dice.cli import positive
    p.add_argument("--runs", type=positive, default=50,
                   help="timed calls of each eager program (default: %(default)s)")
    p.add_argument("--inductor", action="store_true",
                   help="also time each program compiled by Inductor, for the report")
    p.add_argument("--jobs", type=positive, help="nvcc processes at once")


def _add_threshold(p):
    from dice.curate.verify import DEFAULT_THRESHOLD
    p.add_argument("--threshold", type=_positive_float, default=DEFAULT_THRESHOLD,
                   help="speedup over eager a pair needs to be kept (default: %(default)s)")


def add_curate_parser(sub):
    """The `curate` subcommand and its own subcommands."""
    curate = sub.add_parser("curate", help="PyTorch/CUDA pairs through the verifier "
                                           "into CuKe-format data")
    csub = curate.add_subparsers(dest="curate_command", required=True)
    config_help = ("a dice.toml: its [prompt] templates (prepare) and [verifier] "
                   "tolerances and trials (verify)")

    p = csub.add_parser("prepare", help="pairs -> kernel requests (needs the compiler)")
    _add_pairs_options(p)
    p.add_argument("--work", required=True, help="the work folder to fill")
    p.add_argument("--config", help=config_help)
    p.set_defaults(run=prepare_command)

    p = csub.add_parser("verify", help="time and verify a prepared work folder (on a GPU)")
    p.add_argument("--work", required=True, help="a folder `prepare` filled")
    _add_threshold(p)
    _add_verify_options(p)
    p.add_argument("--config", help=config_help)
    p.set_defaults(run=verify_command)

    p = csub.add_parser("report", help="kept pairs (CuKe JSONL), report and plot")
    p.add_argument("--work", required=True, help="a folder `verify` filled")
    p.add_argument("--out", required=True, help="where curated.jsonl and the report go")
    _add_threshold(p)
    p.set_defaults(run=report_command)

    p = csub.add_parser("times", help="time task packs' programs eagerly (and with "
                                      "Inductor): a verifier.baseline_times file")
    p.add_argument("packs", nargs="+", help="task pack (or prepared pair) JSONL files")
    p.add_argument("--out", required=True, help="where times.json and measure.jsonl go")
    _add_verify_options(p)
    p.set_defaults(run=times_command)

    p = csub.add_parser("run", help="prepare, verify and report, on a machine with both")
    _add_pairs_options(p)
    p.add_argument("--out", required=True, help="where curated.jsonl and the report go")
    p.add_argument("--work", help="the work folder (default: OUT/work)")
    _add_threshold(p)
    _add_verify_options(p)
    p.add_argument("--config", help=config_help)
    p.set_defaults(run=run_command)


def main(argv=None):
    """`dice-curate`: the same commands as `dice curate`."""
    parser = argparse.ArgumentParser(prog="dice-curate", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    add_curate_parser(sub)
    args = parser.parse_args(["curate", *(sys.argv[1:] if argv is None else argv)])
    try:
        return args.run(args)
    except DiceError as e:
        print(f"dice-curate: error: {e}", file=sys.stderr)
        return 1
