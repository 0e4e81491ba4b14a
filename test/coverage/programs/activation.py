"""Every common activation, as its nn module or functional form."""

import torch
from torch import nn
from torch.nn import functional as F

from . import fn, program, r

MODULES = {
    "relu": nn.ReLU, "relu6": nn.ReLU6, "leaky_relu": lambda: nn.LeakyReLU(0.05),
    "elu": nn.ELU, "selu": nn.SELU, "celu": lambda: nn.CELU(0.7), "gelu": nn.GELU,
    "gelu_tanh": lambda: nn.GELU(approximate="tanh"), "silu": nn.SiLU, "mish": nn.Mish,
    "softplus": lambda: nn.Softplus(beta=2.0, threshold=10.0), "softsign": nn.Softsign,
    "sigmoid": nn.Sigmoid, "tanh": nn.Tanh, "hardsigmoid": nn.Hardsigmoid,
    "hardswish": nn.Hardswish, "hardtanh": lambda: nn.Hardtanh(-0.7, 0.9),
    "logsigmoid": nn.LogSigmoid, "tanhshrink": nn.Tanhshrink,
    "softshrink": lambda: nn.Softshrink(0.3), "hardshrink": lambda: nn.Hardshrink(0.4),
    "threshold": lambda: nn.Threshold(0.1, -2.0),
}

for _name, _make in MODULES.items():
    program("activation", _name, dynamic=True)(
        lambda make=_make: (make(), (r(4, 24),)))


@program("activation", "prelu", dynamic=True)
def _():
    act = nn.PReLU(6)
    with torch.no_grad():
        act.weight.uniform_(0.05, 0.5)
    return act, (r(3, 6, 5),)


@program("activation", "glu", dynamic=True)
def _():
    return nn.GLU(dim=-1), (r(4, 16),)


@program("activation", "rrelu_eval")
def _():
    # Eval mode: the fixed slope (lower + upper) / 2.
    return nn.RReLU(0.1, 0.3), (r(4, 12),)


@program("activation", "swiglu", dynamic=True)
def _():
    class SwiGlu(nn.Module):
        def forward(self, x):
            a, b = x.chunk(2, dim=-1)
            return F.silu(a) * b

    return SwiGlu(), (r(4, 32),)

# An activation scaled by a Python int computed on (`n + 1`).
fn("activation", "leaky_relu_int_gain", lambda: (r(4, 8), 3), dynamic=True)(
    lambda x, n: F.leaky_relu(x, 0.1) * (n + 1))
