"""2-D max pooling, 3x3 window, stride 2, padding 1 (a ResNet stem's pooling)."""

import torch
import torch.nn as nn

BATCH = 128
CHANNELS = 64
HEIGHT = 96
WIDTH = 96


class Model(nn.Module):
    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [3, 2, 1]
