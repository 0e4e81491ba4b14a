"""ConvNeXt block: depthwise 7x7 conv, channels-last LayerNorm, 4x pointwise MLP with GELU, layer scale, residual."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 76
CHANNELS = 96
HEIGHT = 32
WIDTH = 32
LAYER_SCALE = 0.1


class Model(nn.Module):
    def __init__(self, channels, layer_scale):
        super().__init__()
        self.dwconv = nn.Conv2d(channels, channels, 7, padding=3, groups=channels)
        self.norm = nn.LayerNorm(channels, eps=1e-6)
        self.pw1 = nn.Linear(channels, 4 * channels)
        self.pw2 = nn.Linear(4 * channels, channels)
        self.gamma = nn.Parameter(torch.full((channels,), layer_scale))

    def forward(self, x):
        y = self.dwconv(x).permute(0, 2, 3, 1)                        # [B, H, W, C]
        y = self.pw2(F.gelu(self.pw1(self.norm(y)))) * self.gamma
        return x + y.permute(0, 3, 1, 2)                              # [B, C, H, W]


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, LAYER_SCALE]
