"""`dice train ...`: the compiler side of training.

    dice train prepare IN.jsonl OUT.jsonl [--granularity function] [--skip-bad]
                       [--config dice.toml]
    dice train tokenizer CORPUS.jsonl... OUT_DIR --vocab-size N
    dice train plot METRICS.jsonl [--out DIR]
"""

import sys


def prepare_command(args):
    from dice.train.prepare import prepare
    packed, written, skipped = prepare(args.input, args.output, args.granularity,
                                       skip_bad=args.skip_bad, config=args.config)
    print(f"wrote {written} task pack line(s) for {packed} task(s) to {args.output}"
          + (f"; skipped {skipped} bad line(s)" if skipped else ""), file=sys.stderr)
    return 0


def tokenizer_command(args):
    from dice.train.bpe import train_tokenizer
    vocab = train_tokenizer(args.corpus, args.out_dir, args.vocab_size)
    print(f"wrote a {vocab}-token tokenizer to {args.out_dir}", file=sys.stderr)
    return 0


def plot_command(args):
    from dice.train.plot import plot_metrics
    for path in plot_metrics(args.metrics, args.out):
        print(f"wrote {path}")
    return 0


def plot_sweep_command(args):
    from dice.train.plot import MetricsError, plot_sweep
    runs = {}
    for item in args.runs:
        label, sep, path = item.partition("=")
        if not sep or not label or not path:
            raise MetricsError(f"'{item}': expected LABEL=METRICS.jsonl")
        runs[label] = path
    print(f"wrote {plot_sweep(runs, args.out)}")
    return 0


def add_train_parser(sub):
    """The `train` subcommand and its own subcommands, under `dice`."""
    from dice.cli import positive  # dice.cli imports this module first
    train = sub.add_parser("train", help="task packs, tokenizer and plots for dice-train")
    train_sub = train.add_subparsers(dest="train_command", required=True)

    prepare = train_sub.add_parser(
        "prepare", help="RL tasks (JSONL: pytorch_code, level, id) -> task packs (JSONL)")
    prepare.add_argument("input", help="the tasks, one JSON object a line")
    prepare.add_argument("output", help="where the task packs go")
    prepare.add_argument("--granularity", default="function",
                         choices=["op", "fusion", "function"])
    prepare.add_argument("--skip-bad", action="store_true",
                         help="report bad lines on stderr and go on, instead of stopping")
    prepare.add_argument("--config", help="a dice.toml whose [prompt] templates word the "
                                           "prompts (default: the built-in wording)")
    prepare.set_defaults(run=prepare_command)

    tokenizer = train_sub.add_parser(
        "tokenizer", help="train a byte-level BPE (Qwen2 files) on corpus JSONL texts")
    tokenizer.add_argument("corpus", nargs="+", help="corpus or task-pack JSONL files")
    tokenizer.add_argument("out_dir", help="the tokenizer folder to write")
    tokenizer.add_argument("--vocab-size", type=positive, required=True,
                           help="tokens in all, the special tokens included")
    tokenizer.set_defaults(run=tokenizer_command)

    plot = train_sub.add_parser("plot", help="PNG curves of dice-train's metrics JSONL")
    plot.add_argument("metrics", help="the per-step metrics JSONL")
    plot.add_argument("--out", help="where the PNGs go (default: beside the metrics)")
    plot.set_defaults(run=plot_command)

    sweep = train_sub.add_parser(
        "plot-sweep", help="one PNG of several runs' SFT loss against training seconds")
    sweep.add_argument("runs", nargs="+", metavar="LABEL=METRICS",
                       help="a run's label and its metrics JSONL")
    sweep.add_argument("--out", required=True, help="the PNG to write")
    sweep.set_defaults(run=plot_sweep_command)
