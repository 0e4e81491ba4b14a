"""3-D convolution, 3x3x3 kernel, same padding, over a short clip of frames."""

import torch
import torch.nn as nn

BATCH = 44
IN_CHANNELS = 12
OUT_CHANNELS = 24
FRAMES = 12
HEIGHT = 48
WIDTH = 48


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, FRAMES, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
