"""SiLU (x * sigmoid(x)) over a sequence of hidden states."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 84
SEQ = 700
HIDDEN = 1400


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.silu(x)


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN)]


def get_init_inputs():
    return []
