"""Softmax over the middle (non-contiguous) dimension of a 3-D tensor."""

import torch
import torch.nn as nn

BATCH = 272
SOFTMAX_DIM = 400
INNER = 500


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        return self.softmax(x)


def get_inputs():
    return [torch.randn(BATCH, SOFTMAX_DIM, INNER)]


def get_init_inputs():
    return []
