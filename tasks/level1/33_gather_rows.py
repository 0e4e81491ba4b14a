"""torch.gather along the last dimension with a given int64 index tensor."""

import torch
import torch.nn as nn

ROWS = 63040
COLS = 1024
PICKS = 512


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, index):
        return torch.gather(x, 1, index)


def get_inputs():
    return [torch.randn(ROWS, COLS), torch.randint(0, COLS, (ROWS, PICKS))]


def get_init_inputs():
    return []
