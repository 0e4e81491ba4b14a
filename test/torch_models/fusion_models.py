"""PyTorch programs for the fusion policy test, each with the number of
kernel requests dice-outline forms for it at `fusion` granularity.

The counts follow docs/passes.md ("Fusion policy"): a normalization
(reductions over the same rows and the elementwise ops around them) is one
request; a matmul or convolution is one request with its elementwise
epilogue; transposes and reshapes of an operand go into the request that
reads them.
"""

import torch
from torch import nn
from torch.nn import functional as F


def r(*shape):
    return torch.randn(*shape)


class Fn(nn.Module):
    """A module computing `fn(*inputs)`."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *inputs):
        return self.fn(*inputs)


class RmsNorm(nn.Module):
    """RMS norm written out, as Llama's reference code does."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class LinearGelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 32)

    def forward(self, x):
        return F.gelu(self.fc(x))


class ConvGroupNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.norm = nn.GroupNorm(4, 8)

    def forward(self, x):
        return self.norm(self.conv(x))


class GemmGroupNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 16)
        self.norm = nn.GroupNorm(4, 16)

    def forward(self, x):
        return self.norm(self.fc(x))


class ConvTransposeBatchNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(6)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        return self.bn(self.conv(x))


class AttentionScores(nn.Module):
    """softmax(Q K^T / sqrt(d)) V on activations (no weights)."""

    def forward(self, q, k, v):
        scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5  # [B, T, T]
        return torch.softmax(scores, dim=-1) @ v                # [B, T, D]


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 16))

    def forward(self, x):
        return self.net(x)


class NormLinearGelu(nn.Module):
    """The block of docs/passes.md's picture."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(24)
        self.fc = nn.Linear(24, 32)

    def forward(self, x):
        return F.gelu(self.fc(self.norm(x)))


class TransformerMlpBlock(nn.Module):
    """x + W2 gelu(W1 layer_norm(x)): a pre-norm transformer's MLP half."""

    def __init__(self, dim=16):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.norm(x))))


# name -> (build, requests at fusion granularity)
PROGRAMS = {
    "softmax": (lambda: (nn.Softmax(dim=-1), (r(4, 33),)), 1),
    "log_softmax": (lambda: (nn.LogSoftmax(dim=1), (r(5, 17),)), 1),
    "logsumexp": (lambda: (Fn(lambda x: torch.logsumexp(x, dim=-1)), (r(6, 20),)), 1),
    "layer_norm": (lambda: (nn.LayerNorm(24), (r(3, 5, 24),)), 1),
    "rms_norm": (lambda: (RmsNorm(24), (r(3, 5, 24),)), 1),
    # torch-mlir gathers the per-group statistics into per-channel ones
    # with tensor.extract in a loop nest; the gather renders (`index`), so
    # statistics, gather and normalisation are one request.
    "group_norm": (lambda: (nn.GroupNorm(4, 8), (r(2, 8, 5, 5),)), 1),
    "linear_gelu": (lambda: (LinearGelu(), (r(8, 16),)), 1),
    # The matmul reads a transposed activation.
    "matmul_transposed": (lambda: (Fn(lambda a, b: torch.relu(a @ b.t())), (r(8, 16), r(12, 16))), 1),
    # The convolution (or GEMM) alone, then the group norm as above.
    "conv_group_norm": (lambda: (ConvGroupNorm(), (r(2, 3, 6, 6),)), 2),
    "gemm_group_norm": (lambda: (GemmGroupNorm(), (r(5, 12),)), 2),
    # Batch norm in eval mode is elementwise: the convolution's epilogue.
    # The flip of the transposed convolution's weight (a gather over a
    # constant) renders too, and is a request of its own: a weight-only
    # computation that belongs outside, folded at compile time, which the
    # policy does not do yet.
    "conv_transpose_batch_norm": (lambda: (ConvTransposeBatchNorm(), (r(2, 4, 5, 5),)), 2),
    # Q K^T with its scale, the softmax, the product with V.
    "attention_scores": (lambda: (AttentionScores(), (r(2, 6, 8), r(2, 6, 8), r(2, 6, 8))), 3),
    "mlp": (lambda: (Mlp(), (r(8, 16),)), 2),
    "norm_linear_gelu": (lambda: (NormLinearGelu(), (r(5, 24),)), 2),
    "transformer_mlp_block": (lambda: (TransformerMlpBlock(), (r(2, 5, 16),)), 3),
}


# Programs dice-plan cannot turn into a plan yet, and why.
UNPLANNABLE = {}


def build(name, seed=0):
    """(module in eval mode, example inputs) of program `name`, seeded."""
    torch.manual_seed(seed)
    module, inputs = PROGRAMS[name][0]()
    return module.eval(), inputs


def expected_requests(name):
    return PROGRAMS[name][1]
