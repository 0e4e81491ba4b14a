"""The reference program's JSON values, as the C++ reader and writer spell them.

JSON has no number for infinities and NaNs (Python's `json` writes
`Infinity` and `NaN`, which are not JSON; nlohmann-json writes `null`). A
program's `value` is therefore a JSON number when finite and otherwise one
of the strings "inf", "-inf", "nan", "-nan" or "0x<16 hex digits>" (the
bits of any other NaN): the project's one spelling of such numbers, which
verdicts use too (dice/Support/NonFinite.h, docs/reference-program.md).
"""

import math
import struct

_QUIET_NAN = 0x7FF8000000000000
_SIGN = 0x8000000000000000


def _bits(value):
    return struct.unpack("<Q", struct.pack("<d", value))[0]


def _from_bits(bits):
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def value_to_json(value):
    """A float as a program's `value` holds it: exact, and valid JSON."""
    value = float(value)
    if math.isfinite(value):
        return value
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    bits = _bits(value)
    if bits == _QUIET_NAN:
        return "nan"
    if bits == _QUIET_NAN | _SIGN:
        return "-nan"
    return f"0x{bits:016x}"


def value_from_json(value):
    """The float a program's `value` stands for; ValueError if it is none."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"a reference program value must be a number or a string, got {value!r}")
    if not isinstance(value, str):
        return float(value)
    named = {"inf": math.inf, "-inf": -math.inf,
             "nan": _from_bits(_QUIET_NAN), "-nan": _from_bits(_QUIET_NAN | _SIGN)}
    if value in named:
        return named[value]
    digits = value[len("0x"):]
    if (value.startswith("0x") and len(digits) == 16
            and all(c in "0123456789abcdefABCDEF" for c in digits)):
        result = _from_bits(int(digits, 16))
        if math.isnan(result):
            return result
    raise ValueError(f"not a reference program value: {value!r}")


def op_values(program):
    """Each op's `value` as a float (0.0 where the op has none), in op order."""
    return [value_from_json(op["value"]) if "value" in op else 0.0 for op in program["ops"]]
