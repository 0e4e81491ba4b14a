"""Small PyTorch models whose torch-mlir exports are the compiler's test inputs.

Every model is written here (no downloaded weights), runs in fp32 with small
shapes, and is initialised deterministically from a fixed seed, so that
`export.py` reproduces the committed `test/Inputs/torch-mlir/<name>.mlir`
byte for byte.

`MODELS` maps a name to a factory returning `(module, example_inputs,
options)`; `options` holds extra keyword arguments for
`torch_mlir.fx.export_and_import` (e.g. `dynamic_shapes`).
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

SEED = 0


class MLP(nn.Module):
    """Linear -> ReLU -> Linear."""

    def __init__(self, d_in=16, d_hidden=32, d_out=8):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class ConvBiasRelu(nn.Module):
    """3x3 Conv2d with bias, then ReLU."""

    def __init__(self, c_in=3, c_out=8):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, kernel_size=3, padding=1, bias=True)

    def forward(self, x):
        return torch.relu(self.conv(x))


class Softmax(nn.Module):
    """Softmax over the last dimension."""

    def forward(self, x):
        return torch.softmax(x, dim=-1)


class LayerNorm(nn.Module):
    """nn.LayerNorm over the last dimension (with affine weight and bias)."""

    def __init__(self, d=32):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        # Non-trivial affine parameters, so they are not folded away as 1/0.
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        return self.norm(x)


class SelfAttention(nn.Module):
    """Multi-head self-attention with explicit matmul/softmax/transpose."""

    def __init__(self, d_model=16, n_heads=2):
        super().__init__()
        assert d_model % n_heads == 0
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        # [b, s, d] -> [b, h, s, dh]
        q = q.reshape(b, s, self.n_heads, self.d_head).transpose(1, 2)
        k = k.reshape(b, s, self.n_heads, self.d_head).transpose(1, 2)
        v = v.reshape(b, s, self.n_heads, self.d_head).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.d_head)
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v)
        ctx = ctx.transpose(1, 2).reshape(b, s, d)
        return self.out(ctx)


class MatmulEpilogue(nn.Module):
    """x @ W + b followed by a GELU (tanh approximation) epilogue."""

    def __init__(self, k=32, n=16):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(k, n) / math.sqrt(k))
        self.bias = nn.Parameter(torch.randn(n) * 0.1)

    def forward(self, x):
        return F.gelu(torch.matmul(x, self.weight) + self.bias, approximate="tanh")


class SDPAAttention(nn.Module):
    """Attention through F.scaled_dot_product_attention.

    Exported so that it lowers to `tm_tensor.attention` (see
    `_sdpa_attention`), an op of torch-mlir's TMTensor dialect that MLIR 22
    does not know: the export (in generic form) is kept to check that
    dice-opt reads it and keeps that op outside kernel requests.
    """

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)


class DynamicRows(nn.Module):
    """Rows of [batch, seq, d] through a layer norm and a linear layer."""

    def __init__(self, d=32, d_out=16):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.proj = nn.Linear(d, d_out)

    def forward(self, x):
        batch, seq, d = x.shape
        rows = self.norm(x.reshape(batch * seq, d))
        return torch.relu(self.proj(rows)).reshape(batch, seq, self.proj.out_features)


def _seeded(build):
    """Run `build` under a fixed seed (module init and example inputs)."""

    def factory():
        torch.manual_seed(SEED)
        with torch.no_grad():
            module, inputs, options = build()
        return module.eval(), inputs, options

    factory.__doc__ = build.__doc__
    return factory


@_seeded
def _mlp():
    return MLP(), (torch.randn(4, 16),), {}


@_seeded
def _conv_bias_relu():
    return ConvBiasRelu(), (torch.randn(1, 3, 8, 8),), {}


@_seeded
def _softmax():
    return Softmax(), (torch.randn(4, 16),), {}


@_seeded
def _layernorm():
    return LayerNorm(), (torch.randn(2, 8, 32),), {}


@_seeded
def _self_attention():
    return SelfAttention(), (torch.randn(1, 8, 16),), {}


@_seeded
def _matmul_epilogue():
    return MatmulEpilogue(), (torch.randn(8, 32),), {}


def _without_sdpa_decompositions():
    """torch-mlir's default decomposition table, minus the SDPA entries."""
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table

    return {
        op: fn
        for op, fn in get_decomposition_table().items()
        if "scaled_dot_product" not in op.name()
    }


@_seeded
def _sdpa_attention():
    shape = (1, 2, 8, 8)  # [batch, heads, seq, head_dim]
    inputs = tuple(torch.randn(shape) for _ in range(3))
    # By default torch-mlir decomposes SDPA (in the FX decomposition table
    # and again in its torch-dialect DecomposeComplexOps) into plain
    # matmul/softmax linalg, which MLIR 22 parses. Keeping
    # aten.scaled_dot_product_attention intact through both makes the
    # linalg-on-tensors lowering emit tm_tensor.attention instead.
    options = {
        "decomposition_table": _without_sdpa_decompositions(),
        "backend_legal_ops": ["aten.scaled_dot_product_attention"],
    }
    return SDPAAttention(), inputs, options


@_seeded
def _dynamic_mlp():
    batch = torch.export.Dim("batch", min=1, max=1024)
    return MLP(), (torch.randn(4, 16),), {"dynamic_shapes": ({0: batch},)}


@_seeded
def _dynamic_layernorm():
    # [batch, seq, d] flattened to rows around a layer norm and a linear
    # layer: a dynamic batch whose multiples (batch * seq) size the rows.
    batch = torch.export.Dim("batch", min=1, max=1024)
    return DynamicRows(), (torch.randn(3, 8, 32),), {"dynamic_shapes": ({0: batch},)}


# Exports that hold ops of a dialect MLIR 22 lacks, with that dialect.
UNKNOWN_DIALECT_OPS = {"sdpa_attention": "tm_tensor"}

MODELS = {
    "mlp": _mlp,
    "conv_bias_relu": _conv_bias_relu,
    "softmax": _softmax,
    "layernorm": _layernorm,
    "self_attention": _self_attention,
    "matmul_epilogue": _matmul_epilogue,
    "sdpa_attention": _sdpa_attention,
    "dynamic_mlp": _dynamic_mlp,
    "dynamic_layernorm": _dynamic_layernorm,
}
