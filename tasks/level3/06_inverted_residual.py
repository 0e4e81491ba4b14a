"""MobileNetV2 inverted residual: 1x1 expand (x6), depthwise 3x3, 1x1 linear projection, residual add."""

import torch
import torch.nn as nn

BATCH = 36
CHANNELS = 48
EXPANSION = 6
HEIGHT = 40
WIDTH = 40


def _bn(channels):
    bn = nn.BatchNorm2d(channels)
    with torch.no_grad():
        bn.running_mean.uniform_(-0.1, 0.1)
        bn.running_var.uniform_(0.5, 1.5)
    return bn


class Model(nn.Module):
    def __init__(self, channels, expansion):
        super().__init__()
        hidden = channels * expansion
        self.block = nn.Sequential(
            nn.Conv2d(channels, hidden, 1, bias=False), _bn(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, hidden, 3, padding=1, groups=hidden, bias=False), _bn(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, channels, 1, bias=False), _bn(channels),
        )

    def forward(self, x):
        return x + self.block(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, EXPANSION]
