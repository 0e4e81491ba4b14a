"""1-D convolution, kernel 5, dilation 4, padding that keeps the length."""

import torch
import torch.nn as nn

BATCH = 144
IN_CHANNELS = 64
OUT_CHANNELS = 96
LENGTH = 2048
KERNEL = 5
DILATION = 4


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, dilation):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size,
                              dilation=dilation, padding=dilation * (kernel_size - 1) // 2)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, LENGTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL, DILATION]
