"""Sum over the middle dimension of a 3-D tensor, keeping it as size 1."""

import torch
import torch.nn as nn

BATCH = 1600
REDUCED = 640
INNER = 160


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x, dim=self.dim, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, REDUCED, INNER)]


def get_init_inputs():
    return [1]
