"""Reading PyTorch/CUDA pair JSONL in the CuKe shape (`pytorch_code`,
`cuda_code`, `level`, optional `id`; the project's corpus rows are that
shape too) or in another data set's, whose field names are given.

A pair's CUDA side is a KernelBench-style Python program that builds its
kernel with `load_inline`. The verifier calls the kernel's host function
as `dice_forward`: a program whose entry point has another name (the one
`load_inline(functions=[...])` exports) gets its CUDA source with that
name renamed.
"""

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from dice.errors import DiceError
from dice.jsonl import json_object_line, nonempty_lines

LEVELS = (1, 2, 3)


@dataclass
class Fields:
    """Which JSON fields hold what; the CuKe names by default."""
    pytorch: str = "pytorch_code"
    cuda: str = "cuda_code"
    level: str = "level"
    id: str = "id"
    default_level: int | None = None   # for rows that have no level field


class PairError(DiceError):
    """A line that is no pair: names the file, line and field."""

    def __init__(self, path, line, field_name, message):
        where = f"{path}:{line}" + (f": field '{field_name}'" if field_name else "")
        super().__init__(f"{where}: {message}")


@dataclass
class Pair:
    id: str
    level: int
    pytorch_code: str
    cuda_code: str
    source: str                 # "file:line", for messages
    row: dict = field(default_factory=dict)  # the line as read, kept in the output


def parse_pair(path, line_no, text, fields):
    row = json_object_line(path, line_no, text, PairError)
    codes = []
    for name in (fields.pytorch, fields.cuda):
        if name not in row:
            raise PairError(path, line_no, name, "missing")
        if not isinstance(row[name], str) or not row[name].strip():
            raise PairError(path, line_no, name, "expected a non-empty string")
        codes.append(row[name])
    if fields.level in row:
        level = row[fields.level]
        if not isinstance(level, int) or isinstance(level, bool) or level not in LEVELS:
            raise PairError(path, line_no, fields.level, f"expected 1, 2 or 3, got {level!r}")
    elif fields.default_level is not None:
        level = fields.default_level
    else:
        raise PairError(path, line_no, fields.level,
                        "missing (give --level to set one for rows without it)")
    pair_id = row.get(fields.id, f"{Path(path).stem}:{line_no}")
    if not isinstance(pair_id, (str, int)) or isinstance(pair_id, bool):
        raise PairError(path, line_no, fields.id, f"expected a string, got {type(pair_id).__name__}")
    return Pair(str(pair_id), level, codes[0], codes[1], f"{path}:{line_no}", row)


def read_pairs(paths, fields=None, skip_bad=False, log=None):
    """The pairs of every file, in order, ids made unique (`#2`, `#3`, ...
    on repeats); with `skip_bad`, lines that are no pair are reported to
    `log` and left out, else the first raises PairError."""
    fields = fields or Fields()
    pairs, skipped, seen = [], 0, {}
    for path in paths:
        for line_no, text in nonempty_lines(path):
            try:
                pair = parse_pair(path, line_no, text, fields)
            except PairError as e:
                if not skip_bad:
                    raise
                skipped += 1
                if log:
                    print(f"skipped: {e}", file=log, flush=True)
                continue
            seen[pair.id] = seen.get(pair.id, 0) + 1
            if seen[pair.id] > 1:
                pair.id = f"{pair.id}#{seen[pair.id]}"
            pairs.append(pair)
    return pairs, skipped


def _literal_string(node, assigned):
    """The value of a string literal, or of a name assigned one."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and node.id in assigned:
        return _literal_string(assigned[node.id], {})
    return None


def _load_inline_calls(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            callee = node.func
            name = callee.attr if isinstance(callee, ast.Attribute) else \
                callee.id if isinstance(callee, ast.Name) else None
            if name == "load_inline":
                yield node


def verifier_input(cuda_code):
    """What the verifier is given for a pair's CUDA program: ("candidate",
    the program) when it defines `dice_forward`, the verifier extracting
    its source as from a model's answer; else ("cuda_source", the source
    with the one function `load_inline` exports renamed `dice_forward`).
    Raises DiceError when neither applies."""
    if re.search(r"\bdice_forward\b", cuda_code):
        return "candidate", cuda_code
    try:
        tree = ast.parse(cuda_code)
    except SyntaxError as e:
        raise DiceError(f"the CUDA program is not Python: line {e.lineno}: {e.msg}") from None
    assigned = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            assigned[node.targets[0].id] = node.value
    calls = list(_load_inline_calls(tree))
    if len(calls) != 1:
        raise DiceError(f"the CUDA program calls load_inline {len(calls)} times; "
                        "a pair's kernel is one extension")
    keywords = {k.arg: k.value for k in calls[0].keywords}
    functions = keywords.get("functions")
    if isinstance(functions, ast.Name):
        functions = assigned.get(functions.id)
    names = [_literal_string(e, assigned) for e in getattr(functions, "elts", [])]
    if len(names) != 1 or names[0] is None:
        raise DiceError("the CUDA program defines no dice_forward and its load_inline "
                        "exports no single function (functions=[...]) to call instead")
    source = _literal_string(keywords.get("cuda_sources"), assigned)
    if source is None:
        raise DiceError("load_inline's cuda_sources is not a string literal (or a name "
                        "assigned one)")
    entry = names[0]
    if not re.search(rf"\b{re.escape(entry)}\b", source):
        raise DiceError(f"the CUDA source does not define '{entry}', the function "
                        "load_inline exports")
    return "cuda_source", re.sub(rf"\b{re.escape(entry)}\b", "dice_forward", source)
