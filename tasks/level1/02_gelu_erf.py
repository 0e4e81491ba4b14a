"""Exact (erf-based) GELU over a 4-D feature map."""

import torch
import torch.nn as nn

BATCH = 144
CHANNELS = 96
HEIGHT = 80
WIDTH = 80


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.GELU()

    def forward(self, x):
        return self.act(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
