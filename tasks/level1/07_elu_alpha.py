"""ELU with alpha = 0.6 over a 3-D tensor."""

import torch
import torch.nn as nn

BATCH = 352
ROWS = 512
COLS = 448
ALPHA = 0.6


class Model(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.act = nn.ELU(alpha=alpha)

    def forward(self, x):
        return self.act(x)


def get_inputs():
    return [torch.randn(BATCH, ROWS, COLS)]


def get_init_inputs():
    return [ALPHA]
