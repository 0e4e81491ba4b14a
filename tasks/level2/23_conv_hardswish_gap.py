"""1x1 convolution, BatchNorm (inference), Hardswish, then global average pooling and flatten."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 192
IN_CHANNELS = 160
OUT_CHANNELS = 960
HEIGHT = 14
WIDTH = 14


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 1, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.1, 0.1)
            self.bn.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        y = F.hardswish(self.bn(self.conv(x)))
        return torch.flatten(F.adaptive_avg_pool2d(y, 1), 1)         # [B, C_out]


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
