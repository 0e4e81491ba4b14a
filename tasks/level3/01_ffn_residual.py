"""Pre-norm transformer feed-forward sublayer: LayerNorm, Linear, GELU, Linear, residual add."""

import torch
import torch.nn as nn

BATCH = 20
SEQ = 256
DIM = 512
HIDDEN = 2048


class Model(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        return x + self.down(self.act(self.up(self.norm(x))))


def get_inputs():
    return [torch.randn(BATCH, SEQ, DIM)]


def get_init_inputs():
    return [DIM, HIDDEN]
