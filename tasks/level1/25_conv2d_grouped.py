"""Grouped 2-D convolution (8 groups), 3x3 kernel, no bias."""

import torch
import torch.nn as nn

BATCH = 208
IN_CHANNELS = 128
OUT_CHANNELS = 192
HEIGHT = 40
WIDTH = 40
GROUPS = 8


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1, groups=groups, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, GROUPS]
