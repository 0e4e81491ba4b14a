"""Mish (x * tanh(softplus(x))) over a 4-D feature map."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 72
CHANNELS = 120
HEIGHT = 72
WIDTH = 90


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.mish(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
