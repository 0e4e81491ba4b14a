"""Select between two tensors with a boolean mask (torch.where)."""

import torch
import torch.nn as nn

BATCH = 160
ROWS = 512
COLS = 640


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, mask, a, b):
        return torch.where(mask, a, b)


def get_inputs():
    mask = torch.rand(BATCH, ROWS, COLS) < 0.3
    return [mask, torch.randn(BATCH, ROWS, COLS), torch.randn(BATCH, ROWS, COLS)]


def get_init_inputs():
    return []
