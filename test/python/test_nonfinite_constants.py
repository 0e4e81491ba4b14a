"""Programs that hold infinite constants keep their meaning through the front end.

torch-mlir spells the identity of a max (max pooling, amax in logsumexp and
softmax) and the fill of a masked score as `0xFF800000` (-inf); a clamp with
`min=-inf` holds it as its bound. Each case is exported with torch-mlir,
outlined and scaffolded with dice-opt, planned with dice-plan, and run
through both reference backends (the printed Python and the ATen executor):
the outputs must match eager PyTorch, and the reference programs must carry
the infinities as JSON strings, never as `null`.
"""

import json
import math
import struct
import subprocess

import pytest
import torch
import torch.nn.functional as F

from build_tree import BIN, tool
from dice.plan import run_plan
from dice.reference_program import op_values, value_from_json, value_to_json
from dice.torch_mlir_import import export_linalg_on_tensors

MAX_RELATIVE_ERROR = 1e-5
NONFINITE = {"inf", "-inf", "nan", "-nan"}


class ClampMinInf(torch.nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=float("-inf")) + 1


class MaxPool1d(torch.nn.Module):
    def forward(self, x):
        return F.max_pool1d(x, kernel_size=3, stride=2)


class MaxPool2dPadded(torch.nn.Module):
    """ResNet's stem pooling: the padding is -inf."""

    def forward(self, x):
        return F.max_pool2d(x, kernel_size=3, stride=2, padding=1)


class LogSumExp(torch.nn.Module):
    def forward(self, x):
        return torch.logsumexp(x, dim=-1)


class KlDiv(torch.nn.Module):
    def forward(self, logits, target_logits):
        return F.kl_div(F.log_softmax(logits, dim=-1), F.softmax(target_logits, dim=-1),
                        reduction="batchmean")


class Attention(torch.nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)


class MaskedAttention(torch.nn.Module):
    """Causal attention with the mask as an argument: masked_fill with -inf."""

    def forward(self, q, k, v, mask):
        scores = q @ k.transpose(-2, -1) / 8**0.5
        return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1) @ v


class CausalAttention(torch.nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def qkv():
    return [torch.randn(1, 2, 4, 8) for _ in range(3)]


CASES = {
    "clamp_min_inf": (ClampMinInf, lambda: [torch.randn(4, 8)]),
    "max_pool1d": (MaxPool1d, lambda: [torch.randn(2, 3, 9)]),
    "max_pool2d_padded": (MaxPool2dPadded, lambda: [torch.randn(1, 2, 8, 8)]),
    "logsumexp": (LogSumExp, lambda: [torch.randn(4, 8)]),
    "kl_div": (KlDiv, lambda: [torch.randn(4, 8), torch.randn(4, 8)]),
    "masked_attention": (MaskedAttention,
                         lambda: qkv() + [torch.ones(4, 4, dtype=torch.bool).tril()]),
}


def relative_error(actual, expected):
    scale = expected.abs().max().item() or 1.0
    return (actual.double() - expected.double()).abs().max().item() / scale


def values_of(program):
    return [op["value"] for op in program["ops"] if "value" in op]


def scaffolded(name, module, example, tmp_path, granularity):
    source = tmp_path / f"{name}.mlir"
    source.write_text(export_linalg_on_tensors(module, example, func_name=name))
    assert "0xFF800000" in source.read_text(), "the export holds no -inf"
    return tool("dice-opt", source, f"--dice-outline=granularity={granularity}",
                "--dice-scaffold")


@pytest.mark.parametrize("granularity", ("op", "fusion"))
@pytest.mark.parametrize("name", sorted(CASES))
def test_reference_programs_compute_the_model(name, granularity, tmp_path):
    build, make_inputs = CASES[name]
    module = build()
    torch.manual_seed(0)
    outlined = scaffolded(name, module, make_inputs(), tmp_path, granularity)
    plan_text = tool("dice-plan", stdin=outlined)
    plan = json.loads(plan_text)
    programs = [s["program"] for s in plan["steps"] if s["kind"] == "program"]
    assert any("request" in s for s in plan["steps"]), "no kernel request"
    values = [v for p in programs for v in values_of(p)]
    # Some infinities become an op's identity (max_pool's), others stay
    # constants: any that stays is a string.
    assert None not in values
    assert all(isinstance(v, (int, float)) or v in NONFINITE for v in values), values
    for program in programs:
        op_values(program)  # every value reads as a float

    plan_path = tmp_path / "plan.json"
    plan_path.write_text(plan_text)
    for seed in (1, 2):
        torch.manual_seed(seed)
        inputs = make_inputs()
        with torch.no_grad():
            expected = module(*inputs)
        expected = list(expected) if isinstance(expected, tuple) else [expected]
        inputs_path, outputs_path = tmp_path / "inputs.pt", tmp_path / "outputs.pt"
        torch.save(list(inputs), inputs_path)
        tool("dice-reference-run", "--plan", plan_path, "--inputs", inputs_path,
             "--outputs", outputs_path)
        backends = {"python": run_plan(plan, inputs), "aten": list(torch.load(outputs_path))}
        for backend, outputs in backends.items():
            assert len(outputs) == len(expected), backend
            for got, want in zip(outputs, expected):
                assert got.shape == want.shape and got.dtype == want.dtype, backend
                err = relative_error(got, want)
                assert err <= MAX_RELATIVE_ERROR, f"{name} ({backend}): {err:.3g}"


@pytest.mark.parametrize("build", (Attention, CausalAttention), ids=("plain", "causal"))
def test_attention_scaffolds(build, tmp_path):
    """torch-mlir's decomposition of scaled_dot_product_attention holds an
    infinite constant (the masked scores' -inf) and a boolean `arith.andi`
    reduction; every request must scaffold, its -inf intact. MLIR prints
    `"` as `\\22`."""
    outlined = scaffolded(build.__name__, build(), qkv(), tmp_path, "fusion")
    assert "scaffold <" in outlined
    assert r"\22value\22:\22-inf\22" in outlined
    assert r"\22value\22:null" not in outlined


def test_a_null_value_is_a_located_error(tmp_path):
    program = {"inputs": [], "outputs": [0],
               "ops": [{"fn": "scalar", "args": [], "value": None,
                        "type": {"shape": [], "dtype": "float32"}}]}
    path = tmp_path / "program.json"
    path.write_text(json.dumps(program))
    proc = subprocess.run([str(BIN / "dice-reference-run"), "--program", str(path),
                           "--print-python"], capture_output=True, text=True)
    assert proc.returncode == 1
    assert f"{path}: error: ops[0].value: must be a number" in proc.stderr


SPECIAL = [math.inf, -math.inf, math.nan, -0.0, 5e-324, -2.2250738585072014e-308,
           1e308, 1.7976931348623157e308, 0.1, float(struct.unpack("<f", b"\x01\x00\x80\x7f")[0])]


def bits(x):
    return struct.pack("<d", x)


@pytest.mark.parametrize("value", SPECIAL, ids=repr)
def test_python_and_cpp_agree_on_values(value, tmp_path):
    """A value Python writes is the double the ATen executor fills with."""
    assert bits(value_from_json(json.loads(json.dumps(value_to_json(value))))) == bits(value)
    program = {"inputs": [], "outputs": [0],
               "ops": [{"fn": "full", "args": [], "value": value_to_json(value),
                        "type": {"shape": [3], "dtype": "float64"}}]}
    path = tmp_path / "program.json"
    path.write_text(json.dumps(program, allow_nan=False))
    inputs_path, outputs_path = tmp_path / "inputs.pt", tmp_path / "outputs.pt"
    torch.save([], inputs_path)
    tool("dice-reference-run", "--program", path, "--inputs", inputs_path,
         "--outputs", outputs_path)
    (out,) = torch.load(outputs_path)
    expected = torch.full((3,), value, dtype=torch.float64)
    if math.isnan(value):
        assert out.isnan().all()
    else:
        assert out.numpy().tobytes() == expected.numpy().tobytes()


def test_bad_values_are_refused():
    for bad in (None, True, "Infinity", "0x7ff0000000000000", "nan:0x7ff8000000000001", [1.0]):
        with pytest.raises(ValueError):
            value_from_json(bad)
