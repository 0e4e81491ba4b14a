"""Inclusive prefix sum along the middle dimension of a 3-D tensor."""

import torch
import torch.nn as nn

BATCH = 320
STEPS = 1024
FEATURES = 256


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.cumsum(x, dim=1)


def get_inputs():
    return [torch.randn(BATCH, STEPS, FEATURES)]


def get_init_inputs():
    return []
