"""3x3 convolution without bias, BatchNorm2d in inference mode, then ReLU."""

import torch
import torch.nn as nn

BATCH = 92
IN_CHANNELS = 48
OUT_CHANNELS = 96
HEIGHT = 48
WIDTH = 48


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU()
        with torch.no_grad():
            # Statistics as a trained network would hold them.
            self.bn.running_mean.uniform_(-0.1, 0.1)
            self.bn.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        return self.relu(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
