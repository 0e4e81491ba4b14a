"""Leaky ReLU with negative slope 0.2 over a 4-D feature map."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 144
CHANNELS = 48
HEIGHT = 100
WIDTH = 120
NEGATIVE_SLOPE = 0.2


class Model(nn.Module):
    def __init__(self, negative_slope):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        return F.leaky_relu(x, negative_slope=self.negative_slope)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [NEGATIVE_SLOPE]
