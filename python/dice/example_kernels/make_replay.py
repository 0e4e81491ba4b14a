"""Writes the replay file of candidate kernels for an example's requests.

    python python/dice/example_kernels/make_replay.py [--example convnet]

Exports the example, outlines and scaffolds it (dice-opt, dice-plan) and
gives each request whose torch ops are in the table below the kernels named
there, as `{"fingerprint", "cuda_source"}` lines of <example>.jsonl, the
file `python -m dice compile` replays. A request not in the table gets no
candidates. Run it again when a change of the compiler changes the
fingerprints.
"""

import argparse
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from dice import examples  # noqa: E402
from dice.pipeline import op_names, requests, write_replay  # noqa: E402
from dice.torch_mlir_import import export_linalg_on_tensors  # noqa: E402

# The torch ops of a request (dice.pipeline.op_names) -> its kernels.
KERNELS = {
    "convnet": {
        "pad conv add maximum": ["conv_bias_relu.cu"],
        "max_pool": ["max_pool.cu"],
        "matmul add gelu": ["linear_gelu.cu"],
        # Deceptive: PyTorch computes the matmul (the static analysis rejects it).
        "matmul add": ["linear_torch_matmul.cu"],
        "softmax": ["row_softmax.cu"],
    },
}


def replay_entries(example, granularity="fusion", workdir=None):
    """(fingerprint, source) pairs for the example's requests, and the ops
    of the requests the table has no kernels for."""
    module, inputs = examples.build(example)
    mlir = export_linalg_on_tensors(module, inputs, func_name=example)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(workdir or tmp, f"{example}.mlir")
        path.write_text(mlir)
        found, _ = requests(path, granularity)
    entries, unmatched = [], []
    for request in found:
        key = " ".join(op_names(request["program"]))
        files = KERNELS[example].get(key)
        if files is None:
            unmatched.append(key)
            continue
        for name in files:
            entries.append((request["fingerprint"], (HERE / example / name).read_text()))
    return entries, unmatched


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--example", default="convnet", choices=sorted(KERNELS))
    args = parser.parse_args(argv)
    entries, unmatched = replay_entries(args.example)
    out = HERE / f"{args.example}.jsonl"
    write_replay(out, entries)
    print(f"{out}: {len(entries)} candidates for "
          f"{len({fp for fp, _ in entries})} requests")
    for key in unmatched:
        print(f"  no kernels for a request of: {key}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
