"""3x3 convolution, GroupNorm (8 groups), then SiLU, as in diffusion U-Net blocks."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 104
IN_CHANNELS = 64
OUT_CHANNELS = 64
HEIGHT = 48
WIDTH = 48
GROUPS = 8


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.norm = nn.GroupNorm(groups, out_channels)

    def forward(self, x):
        return F.silu(self.norm(self.conv(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, GROUPS]
