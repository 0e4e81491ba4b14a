"""3-D convolution, InstanceNorm3d with affine parameters, then LeakyReLU (a 3-D U-Net stage)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 52
IN_CHANNELS = 8
OUT_CHANNELS = 16
DEPTH = 24
HEIGHT = 40
WIDTH = 40


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, 3, padding=1)
        self.norm = nn.InstanceNorm3d(out_channels, affine=True)

    def forward(self, x):
        return F.leaky_relu(self.norm(self.conv(x)), 0.01)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
