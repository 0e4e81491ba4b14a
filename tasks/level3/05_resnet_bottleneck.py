"""ResNet bottleneck block (1x1 reduce, 3x3, 1x1 expand by 4) with an identity shortcut."""

import torch
import torch.nn as nn

BATCH = 100
CHANNELS = 256
WIDTH_CHANNELS = 64
HEIGHT = 28
WIDTH = 28


def _bn(channels):
    bn = nn.BatchNorm2d(channels)
    with torch.no_grad():
        bn.running_mean.uniform_(-0.1, 0.1)
        bn.running_var.uniform_(0.5, 1.5)
    return bn


class Model(nn.Module):
    def __init__(self, channels, width):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(channels, width, 1, bias=False), _bn(width), nn.ReLU(),
            nn.Conv2d(width, width, 3, padding=1, bias=False), _bn(width), nn.ReLU(),
            nn.Conv2d(width, channels, 1, bias=False), _bn(channels),
        )
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.body(x) + x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, WIDTH_CHANNELS]
