"""Unbiased variance of every channel over its spatial extent."""

import torch
import torch.nn as nn

BATCH = 496
CHANNELS = 64
HEIGHT = 64
WIDTH = 80


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.var(x, dim=(2, 3), correction=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) * 2.0 + 0.5]


def get_init_inputs():
    return []
