"""Hand-written RMSNorm followed by a bias-free projection (a pre-norm input projection)."""

import torch
import torch.nn as nn

TOKENS = 11136
DIM = 768
OUT_FEATURES = 1024
EPS = 1e-6


class Model(nn.Module):
    def __init__(self, dim, out_features, eps):
        super().__init__()
        self.eps = eps
        self.scale = nn.Parameter(torch.rand(dim) + 0.5)
        self.proj = nn.Linear(dim, out_features, bias=False)

    def forward(self, x):
        rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return self.proj(x * rms * self.scale)


def get_inputs():
    return [torch.randn(TOKENS, DIM)]


def get_init_inputs():
    return [DIM, OUT_FEATURES, EPS]
