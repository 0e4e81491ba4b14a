"""Writes the scaffold fields of every kernel request in dice-opt's output.

    dice-opt ... --dice-scaffold | python extract-scaffolds.py OUT_DIR FIELD...

Writes OUT_DIR/<request index>.<field>.txt with each field's text decoded
from the MLIR string escapes, so golden files can be plain text.
"""
import pathlib
import re
import sys

STRING = r'"((?:[^"\\]|\\.)*)"'


def decode(escaped):
    # MLIR prints `\` as `\\` and other unprintable or quote bytes as `\XX`.
    raw = re.sub(r"\\(\\|[0-9A-Fa-f]{2})",
                 lambda m: "\\" if m.group(1) == "\\" else chr(int(m.group(1), 16)),
                 escaped)
    return raw.encode("latin-1").decode("utf-8")


def main(out_dir, fields):
    text = sys.stdin.read()
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    scaffolds = re.findall(r"scaffold <(.*?)>(?: attributes \{[^}]*\})? \{\n", text)
    if not scaffolds:
        sys.exit("no scaffolded kernel request in the input")
    for index, body in enumerate(scaffolds):
        values = dict(re.findall(r"(\w+) = " + STRING, body))
        for field in fields:
            if field not in values:
                sys.exit(f"request {index} has no scaffold field '{field}'")
            (out / f"{index}.{field}.txt").write_text(decode(values[field]))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
