"""3x3 convolution, ReLU, then 2x2 max pooling (one VGG-style stage)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 100
IN_CHANNELS = 32
OUT_CHANNELS = 64
HEIGHT = 64
WIDTH = 64


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        return F.max_pool2d(F.relu(self.conv(x)), 2)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
