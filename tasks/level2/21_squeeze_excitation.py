"""Squeeze-and-excitation: global average pool, 1x1 reduce, ReLU, 1x1 expand, sigmoid, channel scaling."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 544
CHANNELS = 256
HEIGHT = 28
WIDTH = 28
REDUCTION = 16


class Model(nn.Module):
    def __init__(self, channels, reduction):
        super().__init__()
        self.reduce = nn.Conv2d(channels, channels // reduction, 1)
        self.expand = nn.Conv2d(channels // reduction, channels, 1)

    def forward(self, x):
        squeezed = F.adaptive_avg_pool2d(x, 1)                        # [B, C, 1, 1]
        gate = torch.sigmoid(self.expand(F.relu(self.reduce(squeezed))))
        return x * gate


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, REDUCTION]
