"""Reading JSONL files with errors that say where."""

import json
from pathlib import Path

from dice.errors import DiceError


def nonempty_lines(path, hint=""):
    """(line number, text) of each non-blank line of `path`; an unreadable
    file is a DiceError naming it (`hint` appended: what to do)."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as e:
        raise DiceError(f"{path}: {e.strerror}{hint}") from None
    return [(n, text) for n, text in enumerate(lines, 1) if text.strip()]


def read_objects(path, missing_hint="", damaged_hint=""):
    """The JSON value of each non-blank line of `path`; a line that is not
    JSON is a DiceError naming the file and line."""
    out = []
    for n, text in nonempty_lines(path, missing_hint):
        try:
            out.append(json.loads(text))
        except json.JSONDecodeError as e:
            raise DiceError(f"{path}:{n}: not JSON ({e.msg}){damaged_hint}") from None
    return out


def json_object_line(path, line_no, text, error):
    """The object of one JSONL line; `error`, an exception class taking
    (path, line, field, message), names the file and line of a line that is
    not a JSON object."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise error(path, line_no, None, f"not JSON: {e.msg} at column {e.colno}") from None
    if not isinstance(value, dict):
        raise error(path, line_no, None, "expected a JSON object")
    return value
