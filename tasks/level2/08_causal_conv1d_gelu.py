"""Causal 1-D convolution (left padding only, dilation 2) followed by GELU."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 116
CHANNELS = 128
LENGTH = 1536
KERNEL = 3
DILATION = 2


class Model(nn.Module):
    def __init__(self, channels, kernel_size, dilation):
        super().__init__()
        self.left_pad = dilation * (kernel_size - 1)
        self.conv = nn.Conv1d(channels, channels, kernel_size, dilation=dilation)

    def forward(self, x):
        # Padding on the left only, so output t sees inputs up to t and no later.
        return F.gelu(self.conv(F.pad(x, (self.left_pad, 0))))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [CHANNELS, KERNEL, DILATION]
