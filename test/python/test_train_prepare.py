"""`dice train prepare`: RL task lines become task packs (one per kernel
request, with the scaffold's texts), and every malformed line is an error
naming the file, the line and the field, or with --skip-bad a note on
stderr while the good lines still go through."""

import json

import pytest

from dice.cli import main
from dice.train.prepare import PACK_FIELDS, TaskError, parse_task, prepare

RELU_BIAS = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, b):
        return torch.relu(x + b)


def get_inputs():
    return [torch.randn(8, 16), torch.randn(16)]


def get_init_inputs():
    return []
'''

TANH = RELU_BIAS.replace("torch.relu(x + b)", "torch.tanh(x)").replace(
    "forward(self, x, b)", "forward(self, x)").replace(
    "[torch.randn(8, 16), torch.randn(16)]", "[torch.randn(4, 32)]")


def write_tasks(path, tasks):
    path.write_text("".join((t if isinstance(t, str) else json.dumps(t)) + "\n" for t in tasks))
    return path


def read_packs(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_packs_carry_the_scaffold_and_the_task(tmp_path, capsys):
    tasks = write_tasks(tmp_path / "tasks.jsonl", [
        {"id": "relu-bias", "level": 2, "pytorch_code": RELU_BIAS},
        {"pytorch_code": TANH, "level": 1}])
    out = tmp_path / "packs.jsonl"
    assert main(["train", "prepare", str(tasks), str(out)]) == 0
    packs = read_packs(out)
    assert [p["id"] for p in packs] == ["relu-bias", "line2"]
    assert [p["level"] for p in packs] == [2, 1]
    for pack, code in zip(packs, [RELU_BIAS, TANH]):
        assert tuple(pack) == PACK_FIELDS
        assert pack["pytorch_code"] == code
        n_inputs = len(pack["program"]["inputs"])
        assert pack["signature"] == "torch::Tensor dice_forward(" + ", ".join(
            f"torch::Tensor x{i}" for i in range(n_inputs)) + ");"
        # The suffix declares what the verifier calls; the prompts embed the
        # reference program and the scaffold.
        assert pack["signature"] in pack["suffix"]
        assert "load_inline" in pack["prefix"]
        assert "class Model" in pack["reference"]
        assert pack["reference"].strip() in pack["infill_prompt"]
        assert pack["suffix"].strip() in pack["infill_prompt"]
        assert pack["end_to_end_prompt"].startswith("<|im_start|>user")
        assert len(pack["fingerprint"]) == 16
    assert packs[0]["fingerprint"] != packs[1]["fingerprint"]
    # One progress line per task.
    assert len([line for line in capsys.readouterr().err.splitlines()
                if line.startswith("[")]) == 2


def test_several_requests_get_numbered_ids(tmp_path):
    tasks = write_tasks(tmp_path / "tasks.jsonl", [
        {"id": "t", "level": 2, "pytorch_code": RELU_BIAS}])
    out = tmp_path / "packs.jsonl"
    assert prepare(tasks, out, granularity="op") == (1, 2, 0)
    packs = read_packs(out)
    assert [p["id"] for p in packs] == ["t#0", "t#1"]
    assert len({p["fingerprint"] for p in packs}) == 2


def test_the_configurations_prompt_templates_word_the_packs(tmp_path):
    tasks = write_tasks(tmp_path / "tasks.jsonl", [
        {"id": "t", "level": 1, "pytorch_code": RELU_BIAS}])
    (tmp_path / "e2e.txt").write_text("Rewrite this program:\n{{reference}}")
    config = tmp_path / "dice.toml"
    config.write_text(f'[prompt]\nend_to_end = "{tmp_path / "e2e.txt"}"\n')
    plain, worded = tmp_path / "plain.jsonl", tmp_path / "worded.jsonl"
    prepare(tasks, plain)
    prepare(tasks, worded, config=config)
    (a,), (b,) = read_packs(plain), read_packs(worded)
    assert b["end_to_end_prompt"] == ("<|im_start|>user\nRewrite this program:\n"
                                      + b["reference"] + "<|im_end|>\n<|im_start|>assistant\n")
    # The code and the other prompt are the compiler's either way.
    assert a["infill_prompt"] == b["infill_prompt"]
    assert (a["reference"], a["prefix"], a["suffix"]) == (b["reference"], b["prefix"], b["suffix"])


@pytest.mark.parametrize("line, field, words", [
    ('{"pytorch_code": "x", "level": 1', None, "not JSON"),
    ('[1, 2]', None, "JSON object"),
    ('{"level": 1}', "pytorch_code", "missing"),
    ('{"pytorch_code": "x", "level": "1"}', "level", "expected int, got str"),
    ('{"pytorch_code": "x", "level": true}', "level", "expected int"),
    ('{"pytorch_code": "x", "level": 4}', "level", "expected 1, 2 or 3"),
    ('{"pytorch_code": 3, "level": 1}', "pytorch_code", "expected str"),
    ('{"pytorch_code": "def get_inputs(): pass", "level": 1}', "pytorch_code",
     "defines no Model"),
    ('{"pytorch_code": "class Model: pass", "level": 1}', "pytorch_code",
     "defines no get_inputs"),
    ('{"pytorch_code": "x", "level": 1, "id": [1]}', "id", "expected a string"),
])
def test_malformed_lines_name_file_line_and_field(line, field, words):
    with pytest.raises(TaskError) as e:
        parse_task("tasks.jsonl", 7, line)
    assert e.value.line == 7 and e.value.field == field
    assert str(e.value).startswith("tasks.jsonl:7: " + (f"field '{field}': " if field else ""))
    assert words in str(e.value)


def test_the_cli_stops_at_a_bad_line_and_exits_1(tmp_path, capsys):
    tasks = write_tasks(tmp_path / "tasks.jsonl", [
        {"pytorch_code": TANH.replace("return [torch.randn(4, 32)]", "raise ValueError('no')"),
         "level": 1}])
    assert main(["train", "prepare", str(tasks), str(tmp_path / "out.jsonl")]) == 1
    err = capsys.readouterr().err
    assert f"dice: error: {tasks}:1: field 'pytorch_code': " in err
    assert "get_inputs() raised ValueError: no" in err
    assert "dice-task-" not in err


def test_skip_bad_reports_each_bad_line_and_keeps_the_good(tmp_path, capsys):
    tasks = write_tasks(tmp_path / "tasks.jsonl", [
        "not json", {"level": 2},
        {"id": 5, "level": 1, "pytorch_code": TANH}, ""])
    out = tmp_path / "packs.jsonl"
    assert main(["train", "prepare", str(tasks), str(out), "--skip-bad"]) == 0
    assert [p["id"] for p in read_packs(out)] == ["5"]
    err = capsys.readouterr().err
    assert f"skipped: {tasks}:1: not JSON" in err
    assert f"skipped: {tasks}:2: field 'pytorch_code': missing" in err
    assert "skipped 2 bad line(s)" in err
