"""Reading JSONL lines with errors that say where."""

import json


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
