"""U-Net encoder stage: two (3x3 conv, GroupNorm, SiLU) layers, returning the skip tensor and its 2x2 max-pooled copy."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 40
IN_CHANNELS = 32
OUT_CHANNELS = 64
HEIGHT = 64
WIDTH = 64
GROUPS = 16


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, groups):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.norm1 = nn.GroupNorm(groups, out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1)
        self.norm2 = nn.GroupNorm(groups, out_channels)

    def forward(self, x):
        h = F.silu(self.norm1(self.conv1(x)))
        skip = F.silu(self.norm2(self.conv2(h)))
        return skip, F.max_pool2d(skip, 2)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, GROUPS]
