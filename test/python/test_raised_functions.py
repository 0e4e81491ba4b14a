"""Reference programs read like the user's code: compound torch functions
that torch-mlir decomposes (a softmax into five ops, a tanh-GELU into eight,
a layer norm into twenty) come back as the one function, and only where the
decomposition matches exactly.

Each case is a small PyTorch program and the compound functions its
reference programs must hold, written here from what the program calls (not
from the compiler's output). It is exported with torch-mlir, outlined at
`fusion` and `function` granularity, scaffolded and planned; the programs'
compound calls must be exactly those, and both backends (the printed Python
and the ATen executor) must compute what eager PyTorch computes. The near
misses (another constant, another dim, another input) must stay decomposed
and stay faithful.
"""

import json
import re
import math
import sys
from collections import Counter

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from build_tree import SOURCE_ROOT, tool
from plan_checks import relative_error, run_aten

sys.path.insert(0, str(SOURCE_ROOT / "test" / "torch_models"))

from dice.plan import run_plan  # noqa: E402
from dice.torch_mlir_import import export_linalg_on_tensors  # noqa: E402
from faithfulness_models import Lambda  # noqa: E402

# The vocabulary's compound functions (docs/reference-program.md).
COMPOUND = {"silu", "gelu", "gelu_tanh", "softplus", "mish", "hardsigmoid", "hardswish",
            "softmax", "log_softmax", "logsumexp", "layer_norm", "rms_norm", "group_norm",
            "leaky_relu", "elu", "selu", "celu", "relu6", "logsigmoid"}
MAX_RELATIVE_ERROR = 1e-5


class Affine(nn.Module):
    """A norm with its own weight (and bias), as models hold them."""

    def __init__(self, fn, shape, bias=True):
        super().__init__()
        self.fn = fn
        self.weight = nn.Parameter(torch.rand(shape) + 0.5)
        self.bias = nn.Parameter(torch.randn(shape)) if bias else None

    def forward(self, x):
        return self.fn(x, self.weight, self.bias)


def rms(x, w, _):
    return x * torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + 1e-6) * w


def group_norm(groups, channels, **options):
    """nn.GroupNorm with parameters other than its initial ones and zeros."""
    norm = nn.GroupNorm(groups, channels, **options)
    if norm.affine:
        with torch.no_grad():
            norm.weight.copy_(torch.rand(channels) + 0.5)
            norm.bias.copy_(torch.randn(channels))
    return norm


# name: (module, input shapes, the compound calls its programs must hold)
CASES = {
    "softmax_last": (Lambda(lambda x: F.softmax(x, dim=-1)), [(8, 33)], ["softmax"]),
    "softmax_middle": (Lambda(lambda x: torch.softmax(x, dim=1)), [(2, 7, 5)], ["softmax"]),
    "log_softmax": (Lambda(lambda x: F.log_softmax(x, dim=-1)), [(6, 40)], ["log_softmax"]),
    "logsumexp": (Lambda(lambda x: torch.logsumexp(x, dim=-1)), [(5, 24)], ["logsumexp"]),
    "gelu_erf": (Lambda(F.gelu), [(4, 64)], ["gelu"]),
    "gelu_tanh": (Lambda(lambda x: F.gelu(x, approximate="tanh")), [(4, 64)], ["gelu_tanh"]),
    "gelu_by_hand": (Lambda(lambda x: 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))),
                     [(3, 17)], ["gelu"]),
    "silu": (Lambda(F.silu), [(4, 9, 5)], ["silu"]),
    "silu_by_hand": (Lambda(lambda x: x * torch.sigmoid(x)), [(6, 11)], ["silu"]),
    "softplus": (Lambda(F.softplus), [(5, 12)], ["softplus"]),
    "mish": (Lambda(F.mish), [(5, 12)], ["mish"]),
    # Half precision: computed in float32 between two casts, the threshold
    # compared in float64.
    "mish_half": (Lambda(F.mish), [(5, 12)], ["mish"], torch.float16),
    "softplus_bfloat16": (Lambda(F.softplus), [(5, 12)], ["softplus"], torch.bfloat16),
    "hardsigmoid": (Lambda(F.hardsigmoid), [(5, 12)], ["hardsigmoid"]),
    "hardswish": (Lambda(F.hardswish), [(5, 12)], ["hardswish"]),
    "leaky_relu": (nn.LeakyReLU(), [(5, 12)], ["leaky_relu"]),
    "leaky_relu_slope": (Lambda(lambda x: F.leaky_relu(x, 0.2)), [(5, 12)], ["leaky_relu"]),
    "elu": (nn.ELU(), [(5, 12)], ["elu"]),
    "elu_alpha": (Lambda(lambda x: F.elu(x, alpha=0.5)), [(5, 12)], ["elu"]),
    "selu": (nn.SELU(), [(5, 12)], ["selu"]),
    "celu": (Lambda(lambda x: F.celu(x, alpha=0.5)), [(5, 12)], ["celu"]),
    "relu6": (nn.ReLU6(), [(5, 12)], ["relu6"]),
    "logsigmoid": (nn.LogSigmoid(), [(5, 12)], ["logsigmoid"]),
    "layer_norm": (nn.LayerNorm(30), [(8, 30)], ["layer_norm"]),
    "layer_norm_2d_shape": (nn.LayerNorm([4, 6], eps=1e-3), [(3, 4, 6)], ["layer_norm"]),
    "layer_norm_no_affine": (Lambda(lambda x: F.layer_norm(x, (20,))), [(6, 20)],
                             ["layer_norm"]),
    "layer_norm_weight_only": (Affine(lambda x, w, b: F.layer_norm(x, (16,), w), 16,
                                      bias=False), [(5, 16)], ["layer_norm"]),
    "rms_norm_by_hand": (Affine(rms, 32, bias=False), [(2, 3, 32)], ["rms_norm"]),
    "group_norm": (group_norm(2, 6), [(2, 6, 4, 4)], ["group_norm"]),
    "group_norm_1d": (group_norm(4, 8, eps=1e-3), [(3, 8, 10)], ["group_norm"]),
    "group_norm_no_spatial": (group_norm(2, 8), [(5, 8)], ["group_norm"]),
    "group_norm_one_group": (group_norm(1, 4), [(2, 4, 3, 3)], ["group_norm"]),
    "group_norm_per_channel": (group_norm(6, 6), [(2, 6, 5, 3)], ["group_norm"]),
    # Without weight and bias, a group norm is a layer norm of the grouped view.
    "group_norm_no_affine": (group_norm(3, 6, affine=False), [(2, 6, 5, 5)], ["layer_norm"]),
    "linear_gelu": (nn.Sequential(nn.Linear(16, 24), nn.GELU()), [(8, 16)], ["gelu"]),
    "two_functions": (Lambda(lambda x: F.softmax(F.silu(x), dim=-1)), [(4, 10)],
                      ["silu", "softmax"]),
    # Near misses: each differs from a pattern in one place and stays as it is.
    "silu_other_input": (Lambda(lambda x: x * torch.sigmoid(2 * x)), [(6, 11)], []),
    "gelu_other_constant": (Lambda(lambda x: 0.5 * x * (1 + torch.tanh(
        0.8 * (x + 0.044715 * x ** 3)))), [(4, 8)], []),
    "softmax_sum_other_dim": (Lambda(lambda x: torch.exp(x - x.amax(-1, keepdim=True)) /
                                     torch.exp(x - x.amax(-1, keepdim=True)).sum(
                                         0, keepdim=True)), [(5, 7)], []),
    "softplus_beta": (Lambda(lambda x: F.softplus(x, beta=2.0)), [(5, 12)], []),
    "group_norm_shift_by_other_scale": (Affine(
        lambda x, w, b: x * (w / x.std()).view(1, 6, 1, 1) + b.view(1, 6, 1, 1), 6),
        [(2, 6, 4, 4)], []),
    "leaky_relu_of_another_value": (Lambda(lambda x: F.relu(x) + torch.clamp(x * 2, max=0) * 0.1),
                                    [(5, 12)], []),
    "elu_minus_two": (Lambda(lambda x: F.relu(x) + (torch.exp(torch.clamp(x, max=0)) - 2)),
                      [(5, 12)], []),
    "relu_clipped_at_five": (Lambda(lambda x: torch.clamp(x, 0, 5)), [(5, 12)], []),
    "unbiased_variance": (Lambda(lambda x: (x - x.mean(-1, keepdim=True)) * torch.rsqrt(
        x.var(-1, keepdim=True, unbiased=True) + 1e-5)), [(6, 20)], []),
}


def compounds(plan):
    """The compound calls of every step's program, counted."""
    return Counter(op["fn"] for step in plan["steps"] if "program" in step
                   for op in step["program"]["ops"] if op["fn"] in COMPOUND)


@pytest.fixture(scope="module", params=sorted(CASES))
def exported(request, tmp_path_factory):
    name = request.param
    module, shapes, want, *dtype = CASES[name]
    dtype = dtype[0] if dtype else torch.float32
    torch.manual_seed(0)
    module.eval()
    example = [torch.randn(s, dtype=dtype) for s in shapes]
    path = tmp_path_factory.mktemp(name) / f"{name}.mlir"
    path.write_text(export_linalg_on_tensors(module, example, func_name=name))
    return name, module, shapes, want, dtype, path


@pytest.mark.parametrize("granularity", ["fusion", "function"])
def test_compound_functions_come_back_and_compute_the_function(exported, granularity,
                                                               tmp_path):
    name, module, shapes, want, dtype, source = exported
    outlined = tool("dice-opt", source, f"--dice-outline=granularity={granularity}",
                    "--dice-scaffold")
    plan_text = tool("dice-plan", stdin=outlined)
    plan = json.loads(plan_text)
    assert compounds(plan) == Counter(want), f"{name} ({granularity})"
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(plan_text)
    g = torch.Generator().manual_seed(7)
    inputs = [(torch.randn(s, generator=g) * 3).to(dtype) for s in shapes]
    with torch.no_grad():
        expected = module(*inputs)
    for backend, outputs in (("python", run_plan(plan, inputs)),
                             ("aten", run_aten(plan_path, inputs, tmp_path))):
        (got,) = outputs
        assert got.dtype == expected.dtype and got.shape == expected.shape
        err = relative_error(got, expected)
        assert err <= MAX_RELATIVE_ERROR, f"{name} ({granularity}, {backend}): {err:.3g}"


def test_the_prompt_shows_the_function(tmp_path):
    """What the model reads: one call where the decomposition had many ops."""
    module = nn.Sequential(nn.Linear(16, 32), nn.GELU(approximate="tanh"), nn.LayerNorm(32))
    path = tmp_path / "block.mlir"
    path.write_text(export_linalg_on_tensors(module.eval(), [torch.randn(4, 16)],
                                             func_name="block"))
    outlined = tool("dice-opt", path, "--dice-outline=granularity=function", "--dice-scaffold")
    plan = json.loads(tool("dice-plan", stdin=outlined))
    python = "".join(step.get("python", "") for step in plan["steps"])
    assert "torch.nn.functional.gelu(" in python and "approximate='tanh'" in python
    assert "torch.nn.functional.layer_norm(" in python and "eps=1e-05" in python
    assert "torch.tanh" not in python and "torch.rsqrt" not in python


# A compound elementwise call in a printed program and its comment:
# `t2 = torch.nn.functional.mish(x0)  # x0 * tanh(log1p(exp(x0)))`.
DEFINED_CALL = re.compile(r"^\s*\w+ = (torch\.nn\.functional\.\w+\((\w+)[^#\n]*\))  # (.+)$",
                          re.MULTILINE)
ELEMENTARY = ("sigmoid", "erf", "tanh", "where", "log1p", "exp", "expm1", "clamp", "abs")


def test_the_prompt_carries_the_math_of_each_function(exported):
    """The comment of every compound elementwise call computes what torch's
    function computes (torch is the oracle), far into both tails."""
    name, module, shapes, want, dtype, source = exported
    outlined = tool("dice-opt", source, "--dice-outline=granularity=function", "--dice-scaffold")
    plan = json.loads(tool("dice-plan", stdin=outlined))
    python = "".join(step.get("python", "") for step in plan["steps"])
    calls = DEFINED_CALL.findall(python)
    elementwise = [fn for fn in want if fn not in ("softmax", "log_softmax", "logsumexp",
                                                   "layer_norm", "rms_norm", "group_norm")]
    assert len(calls) == len(elementwise), python
    x = torch.linspace(-60, 60, 4001, dtype=torch.float64)
    for call, argument, definition in calls:
        scope = {"torch": torch, argument: x, **{f: getattr(torch, f) for f in ELEMENTARY}}
        expected = eval(call, scope)
        got = eval(definition, scope)
        assert torch.allclose(got, expected, rtol=1e-9, atol=1e-12), (call, definition)
