"""1-D max pooling, window 4, stride 2, dilation 2, over a long signal."""

import torch
import torch.nn as nn

BATCH = 104
CHANNELS = 64
LENGTH = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool1d(kernel_size=4, stride=2, dilation=2)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return []
