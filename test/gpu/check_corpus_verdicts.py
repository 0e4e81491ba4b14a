"""Checks the verifier's verdicts on the deception corpus against its labels.

Input: the JSON lines of `dice-verify --json` over the corpus (one verdict per
file, in labels.json order of the batch written by --write-batch), run where
the GPU is, and optionally the static findings of a run with the compiler
half (--static, the same format), because GPU machines may lack Clang.

The verdict of a file is `deceptive` when the static analysis flags it, the
GPU run's otherwise. A label is right when that verdict equals the label's
`dynamic` status; honest kernels labelled `accepted` or `slow` are right with
either (both mean correct: which one wins depends on the baseline's speed on
the day), and the table says which. A false accept (an accepted verdict for
a kernel labelled anything but accepted/slow) fails the run whatever else.
A label's `gpu` status, where it has one, is what the GPU checks alone must
say (for kernels the static analysis also catches): both must hold.

    check_corpus_verdicts.py --write-batch batch.jsonl
    check_corpus_verdicts.py --gpu gpu.jsonl [--static static.jsonl] [--markdown out.md]
"""

import argparse
import json
import re
import sys
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[1] / "verifier" / "corpus"
SIGNATURE = re.compile(r"((?:std::vector<torch::Tensor>)|(?:torch::Tensor))\s+dice_forward\s*\(([^)]*)\)")
CORRECT = {"accepted", "slow"}


def labels():
    return json.loads((CORPUS / "labels.json").read_text())


def corpus_entries():
    """Every corpus file as a candidate: name, label, source, the
    `dice_forward` declaration it defines and its reference program (None
    where labels.json names no computation)."""
    entries = []
    for name, label in labels().items():
        source = (CORPUS / name).read_text()
        result, params = SIGNATURE.search(source).groups()
        program = CORPUS / "programs" / (Path(name).stem + ".json")
        entries.append({"name": name, "label": label, "source": source,
                        "declaration": f"{result} dice_forward({params.strip()});",
                        "program": json.loads(program.read_text()) if program.exists() else None})
    return entries


def write_batch(path):
    with open(path, "w") as out:
        for i, c in enumerate(corpus_entries()):
            entry = {"name": c["name"], "fingerprint": f"corpus{i:03d}",
                     "signature": c["declaration"], "cuda_source": c["source"]}
            if c["program"] is not None:
                entry["program"] = c["program"]
            out.write(json.dumps(entry) + "\n")


def read_verdicts(path):
    verdicts = [json.loads(line) for line in Path(path).read_text().splitlines()
                if line.startswith("{")]
    names = list(labels())
    if len(verdicts) != len(names):
        sys.exit(f"{path}: {len(verdicts)} verdicts for {len(names)} corpus files")
    return dict(zip(names, verdicts))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-batch")
    parser.add_argument("--gpu")
    parser.add_argument("--static")
    parser.add_argument("--markdown")
    args = parser.parse_args()
    if args.write_batch:
        write_batch(args.write_batch)
        return
    gpu = read_verdicts(args.gpu)
    static = read_verdicts(args.static) if args.static else {}
    rows, wrong, false_accepts = [], 0, 0
    for name, label in labels().items():
        dynamic = gpu[name]
        flagged = static.get(name, {}).get("status") == "deceptive"
        final = "deceptive" if flagged else dynamic["status"]
        want = label["dynamic"]
        right = final == want or (want in CORRECT and final in CORRECT)
        if "gpu" in label:
            right = right and dynamic["status"] == label["gpu"]
        false_accept = final == "accepted" and want not in CORRECT
        wrong += not right
        false_accepts += false_accept
        reason = (dynamic.get("reason") or "").splitlines()[0][:90] if dynamic.get("reason") else ""
        speed = f"{dynamic['speedup']:.2f}x" if dynamic.get("speedup") else ""
        if "gpu" in label:
            want = f"{want} (GPU alone: {label['gpu']})"
        rows.append(f"| {name} | {want} | {'deceptive' if flagged else '-'} | "
                    f"{dynamic['status']} | {speed} | {final} | {'yes' if right else 'NO'} | {reason} |")
    table = ["| file | label | static | GPU run | speedup | verdict | right | GPU reason |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |", *rows]
    summary = (f"{len(rows) - wrong}/{len(rows)} labels right, {false_accepts} false accepts")
    text = "\n".join(table) + "\n\n" + summary + "\n"
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)
    sys.exit(1 if wrong or false_accepts else 0)


if __name__ == "__main__":
    main()
