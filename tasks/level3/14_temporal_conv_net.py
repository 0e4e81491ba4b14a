"""Temporal convolutional network: three residual blocks of dilated causal convolutions (dilation 1, 2, 4) with ReLU."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 100
CHANNELS = 64
LENGTH = 1024
KERNEL = 3


class CausalResidualBlock(nn.Module):
    def __init__(self, channels, kernel_size, dilation):
        super().__init__()
        self.left_pad = dilation * (kernel_size - 1)
        self.conv1 = nn.Conv1d(channels, channels, kernel_size, dilation=dilation)
        self.conv2 = nn.Conv1d(channels, channels, kernel_size, dilation=dilation)

    def forward(self, x):
        # Left padding only: an output step never sees a later input step.
        y = F.relu(self.conv1(F.pad(x, (self.left_pad, 0))))
        y = F.relu(self.conv2(F.pad(y, (self.left_pad, 0))))
        return F.relu(x + y)


class Model(nn.Module):
    def __init__(self, channels, kernel_size):
        super().__init__()
        self.blocks = nn.Sequential(*(CausalResidualBlock(channels, kernel_size, d) for d in (1, 2, 4)))

    def forward(self, x):
        return self.blocks(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [CHANNELS, KERNEL]
