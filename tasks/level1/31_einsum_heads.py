"""Per-head projection of a sequence written as an einsum: bsd,hde->bhse."""

import torch
import torch.nn as nn

BATCH = 144
SEQ = 256
MODEL_DIM = 512
HEADS = 8
HEAD_DIM = 64


class Model(nn.Module):
    def __init__(self, model_dim, heads, head_dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(heads, model_dim, head_dim) / model_dim ** 0.5)

    def forward(self, x):
        return torch.einsum("bsd,hde->bhse", x, self.weight)


def get_inputs():
    return [torch.randn(BATCH, SEQ, MODEL_DIM)]


def get_init_inputs():
    return [MODEL_DIM, HEADS, HEAD_DIM]
