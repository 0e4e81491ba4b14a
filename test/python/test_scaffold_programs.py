"""dice-scaffold-programs: the scaffold of a reference program given
directly is exactly what dice-scaffold writes for the request the program
came from (the data engine's prompts and signatures rest on this).

The oracle is the compiler itself: every committed torch-mlir export,
outlined at each granularity and scaffolded by dice-opt; each request's
program is then handed to the tool alone."""

import json
import subprocess

import pytest

from build_tree import BIN, SOURCE_ROOT
from dice.errors import ToolFailed
from dice.pipeline import requests

TOOL = BIN / "dice-scaffold-programs"
EXPORTS = sorted((SOURCE_ROOT / "test" / "Inputs" / "torch-mlir").glob("*.mlir"))
# The tool's key for each of dice-scaffold's texts.
TEXTS = {"fingerprint": "fingerprint", "signature": "signature", "reference": "python",
         "prefix": "prefix", "suffix": "suffix", "infill_prompt": "infill_prompt",
         "end_to_end_prompt": "end_to_end_prompt"}


def scaffold(lines, *args):
    return subprocess.run([str(TOOL), *map(str, args)], input=lines, capture_output=True,
                          text=True, timeout=60)


@pytest.fixture(scope="module")
def compiled_requests():
    found = []
    for path in EXPORTS:
        for granularity in ("function", "fusion", "op"):
            try:
                made, _ = requests(path, granularity)
            except ToolFailed:  # an export dice-opt does not outline at this granularity
                continue
            found.extend(made)
    assert len(found) > 50
    return found


def test_the_scaffold_is_the_compilers(compiled_requests):
    lines = "".join(json.dumps({"program": r["program"], "row": i}) + "\n"
                    for i, r in enumerate(compiled_requests))
    proc = scaffold(lines)
    assert proc.returncode == 0, proc.stderr
    written = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [w["row"] for w in written] == list(range(len(compiled_requests)))
    for got, want in zip(written, compiled_requests):
        for ours, theirs in TEXTS.items():
            assert got[ours] == want[theirs], (ours, want["fingerprint"])
        assert got["program"] == want["program"]


def test_the_prompt_templates_of_dice_toml(compiled_requests, tmp_path):
    template = tmp_path / "infill.txt"
    template.write_text("Write it.\n{{reference}}{{prefix}}<hole>{{suffix}}\n")
    request = compiled_requests[0]
    proc = scaffold(json.dumps({"program": request["program"]}) + "\n",
                    "--infill-template", template)
    assert proc.returncode == 0, proc.stderr
    (got,) = [json.loads(line) for line in proc.stdout.splitlines()]
    assert "Write it." in got["infill_prompt"] and request["prefix"] in got["infill_prompt"]
    assert got["end_to_end_prompt"] == request["end_to_end_prompt"]


@pytest.mark.parametrize("line,why", [
    ("not json", "expected a JSON object with a \"program\""),
    ('{"row": 1}', "expected a JSON object with a \"program\""),
    ('{"program": {"inputs": [], "ops": [{"fn": "no_such_fn", "args": []}], "outputs": [0]}}',
     "not a reference program"),
])
def test_a_bad_line_is_an_error_at_its_line(line, why):
    good = json.dumps({"program": {"inputs": [{"dtype": "float32", "shape": [4]}],
                                   "ops": [{"fn": "exp", "args": [0],
                                            "type": {"dtype": "float32", "shape": [4]}}],
                                   "outputs": [1]}})
    proc = scaffold(good + "\n\n" + line + "\n")
    assert proc.returncode == 1
    assert proc.stderr.startswith("<stdin>:3: error: ") and why in proc.stderr
    assert len(proc.stdout.splitlines()) == 1  # the good line was written
