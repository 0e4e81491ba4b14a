"""The verdict JSON as python/dice reads it: non-finite measurements are
strings (docs/verifier.md, "Verdict JSON") and come back as the same
floats, bit for bit."""

import json
import math
import struct

import pytest

from dice.pipeline import verdict_number, with_float_measurements


def bits(value):
    return struct.pack(">d", value).hex()


def test_verdict_numbers_read_back_exactly():
    assert verdict_number("inf") == math.inf
    assert verdict_number("-inf") == -math.inf
    assert math.isnan(verdict_number("nan"))
    assert bits(verdict_number("-nan"))[0] in "89abcdef", "the sign survives"
    assert bits(verdict_number("0x7ff4000000000001")) == "7ff4000000000001"
    assert verdict_number(5e-324) == 5e-324


def test_parse_verdict_converts_only_measurements():
    verdict = with_float_measurements(json.loads(
        '{"status": "incorrect", "reason": "inf", "max_abs_err": "inf", '
        '"max_rel_err": "nan", "kernel_ms": null, "trials": 5}'))
    assert verdict["reason"] == "inf"
    assert verdict["max_abs_err"] == math.inf
    assert math.isnan(verdict["max_rel_err"])
    assert verdict["kernel_ms"] is None
    assert verdict["trials"] == 5


@pytest.mark.parametrize("text", ["Infinity", "0x3ff0000000000000", "0x7ff8"])
def test_other_strings_are_not_numbers(text):
    with pytest.raises(ValueError):
        verdict_number(text)
