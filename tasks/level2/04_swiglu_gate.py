"""SwiGLU gate: silu(x W1) * (x W3), two bias-free projections of the same input."""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 6272
DIM = 512
HIDDEN = 1376


class Model(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return F.silu(self.w1(x)) * self.w3(x)


def get_inputs():
    return [torch.randn(TOKENS, DIM)]


def get_init_inputs():
    return [DIM, HIDDEN]
