"""Sub-pixel upsampling: 3x3 convolution to 4x the channels, PixelShuffle(2), then PReLU."""

import torch
import torch.nn as nn

BATCH = 28
CHANNELS = 64
HEIGHT = 48
WIDTH = 48
UPSCALE = 2


class Model(nn.Module):
    def __init__(self, channels, upscale):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels * upscale * upscale, 3, padding=1)
        self.shuffle = nn.PixelShuffle(upscale)
        self.act = nn.PReLU(channels)

    def forward(self, x):
        return self.act(self.shuffle(self.conv(x)))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, UPSCALE]
