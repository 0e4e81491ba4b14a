"""Maximum over the last dimension of a 3-D tensor (values only)."""

import torch
import torch.nn as nn

BATCH = 800
ROWS = 400
COLS = 512


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.amax(x, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, ROWS, COLS)]


def get_init_inputs():
    return []
