"""Normalisation layers, with non-trivial affine parameters and statistics."""

import torch
from torch import nn
from torch.nn import functional as F

from . import fn, program, r


def affine(norm):
    # Non-trivial parameters, so none is folded away as 1 or 0.
    with torch.no_grad():
        if getattr(norm, "weight", None) is not None:
            norm.weight.uniform_(0.5, 1.5)
        if getattr(norm, "bias", None) is not None:
            norm.bias.uniform_(-0.5, 0.5)
        if getattr(norm, "running_mean", None) is not None:
            norm.running_mean.uniform_(-0.5, 0.5)
            norm.running_var.uniform_(0.5, 1.5)
    return norm


program("norm", "layernorm", dynamic=True)(lambda: (affine(nn.LayerNorm(16)), (r(3, 5, 16),)))
program("norm", "layernorm_no_affine", dynamic=True)(
    lambda: (nn.LayerNorm(16, elementwise_affine=False), (r(4, 16),)))
program("norm", "layernorm_2d_shape")(lambda: (affine(nn.LayerNorm([4, 6])), (r(3, 4, 6),)))
program("norm", "batchnorm1d", dynamic=True)(lambda: (affine(nn.BatchNorm1d(8)), (r(4, 8),)))
program("norm", "batchnorm2d", dynamic=True)(
    lambda: (affine(nn.BatchNorm2d(4)), (r(2, 4, 5, 5),)))
program("norm", "batchnorm3d")(lambda: (affine(nn.BatchNorm3d(3)), (r(2, 3, 3, 4, 4),)))
program("norm", "groupnorm", dynamic=True)(
    lambda: (affine(nn.GroupNorm(2, 6)), (r(2, 6, 4, 4),)))
program("norm", "instancenorm2d")(
    lambda: (affine(nn.InstanceNorm2d(3, affine=True)), (r(2, 3, 5, 5),)))
program("norm", "rmsnorm_module", dynamic=True)(
    lambda: (affine(nn.RMSNorm(16, eps=1e-6)), (r(4, 16),)))


class RmsNorm(nn.Module):
    """RMSNorm written out, as LLaMA-style models do."""

    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(d) + 0.5)

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


program("norm", "rmsnorm_written", dynamic=True)(lambda: (RmsNorm(16), (r(2, 3, 16),)))
fn("norm", "l2_normalize", lambda: (r(4, 12),), dynamic=True)(
    lambda x: F.normalize(x, dim=-1))
program("norm", "local_response_norm")(
    lambda: (nn.LocalResponseNorm(3), (r(2, 6, 4, 4),)))
