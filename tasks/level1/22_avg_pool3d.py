"""3-D average pooling, 2x2x2 window, stride 2, over a volume."""

import torch
import torch.nn as nn

BATCH = 48
CHANNELS = 24
DEPTH = 32
HEIGHT = 64
WIDTH = 64


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.AvgPool3d(kernel_size=2, stride=2)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
