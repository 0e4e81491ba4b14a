"""The reference program's operations, read from the one table the C++
side is built from (include/dice/Reference/RefOps.def), so that Python
never lists them again.

    OPS["add"].min_args, OPS["conv"].attrs, OPS["gelu"].category

`check_op` says what is wrong with one op of a program in JSON form (the
data engine's programs) before any C++ tool reads it.
"""

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

TABLE = Path(__file__).resolve().parents[2] / "include" / "dice" / "Reference" / "RefOps.def"
ENTRY = re.compile(r"^DICE_REF_(OP|UNARY|BINARY|COMPOUND)\((.*)\)\s*$")
ARGUMENT = re.compile(r'\s*("[^"]*"|[^,]+)\s*(?:,|$)')


@dataclass(frozen=True)
class RefOp:
    name: str
    min_args: int
    max_args: int  # -1: any number
    attrs: tuple   # `ints` keys it must have
    category: str  # RefCategory's enumerator: "Elementwise", "Reduction", ...
    torch: str = ""  # the torch call of a unary or binary function, or F.<call>


def _arguments(text):
    return [a.strip('"') if a.startswith('"') else a.strip()
            for a in ARGUMENT.findall(text)]


@lru_cache(maxsize=None)
def load(path=TABLE):
    """{name: RefOp} in table order; raises with the file and line of an
    entry it cannot read."""
    ops = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        entry = ENTRY.match(line)
        if not entry:
            continue
        kind, args = entry.group(1), _arguments(entry.group(2))
        try:
            if kind == "OP":
                _, name, lo, hi, attrs, category = args
                op = RefOp(name, int(lo), int(hi), tuple(attrs.split()), category)
            elif kind == "UNARY":
                _, name, torch, _ = args
                op = RefOp(name, 1, 1, (), "Elementwise", torch)
            elif kind == "BINARY":
                _, name, torch, _, _ = args
                op = RefOp(name, 2, 2, (), "Elementwise", torch)
            else:
                _, name, call, _, _, _, _ = args
                op = RefOp(name, 1, 1, (), "Compound", "torch.nn.functional." + call)
        except ValueError as e:
            raise ValueError(f"{path}:{number}: cannot read DICE_REF_{kind} entry: {e}") from None
        ops[op.name] = op
    return ops


def check_op(op, index=None):
    """What is wrong with `op` (a dict in the JSON form: fn, args, ints)
    against the table; "" when nothing is."""
    where = f"op {index} ('{op.get('fn')}')" if index is not None else f"op '{op.get('fn')}'"
    info = load().get(op.get("fn"))
    if info is None:
        return f"{where}: unknown operation"
    n = len(op.get("args", []))
    if n < info.min_args or (info.max_args >= 0 and n > info.max_args):
        return f"{where}: wrong number of arguments ({n})"
    ints = op.get("ints", {})
    for key in info.attrs:
        if key not in ints:
            return f"{where}: missing attribute '{key}'"
    return ""
