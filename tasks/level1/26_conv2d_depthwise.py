"""Depthwise 2-D convolution, 5x5 kernel, stride 2."""

import torch
import torch.nn as nn

BATCH = 88
CHANNELS = 160
HEIGHT = 96
WIDTH = 96


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 5, stride=2, padding=2, groups=channels)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS]
