"""Depthwise 3x3 convolution, pointwise 1x1 convolution, then ReLU6 (a separable convolution)."""

import torch
import torch.nn as nn

BATCH = 104
IN_CHANNELS = 96
OUT_CHANNELS = 160
HEIGHT = 48
WIDTH = 48


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.depthwise = nn.Conv2d(in_channels, in_channels, 3, padding=1, groups=in_channels)
        self.pointwise = nn.Conv2d(in_channels, out_channels, 1)
        self.act = nn.ReLU6()

    def forward(self, x):
        return self.act(self.pointwise(self.depthwise(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
