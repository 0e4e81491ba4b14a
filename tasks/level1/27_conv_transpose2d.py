"""Transposed 2-D convolution that doubles the resolution (kernel 4, stride 2, padding 1)."""

import torch
import torch.nn as nn

BATCH = 52
IN_CHANNELS = 96
OUT_CHANNELS = 48
HEIGHT = 48
WIDTH = 48


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, 4, stride=2, padding=1)

    def forward(self, x):
        return self.deconv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
