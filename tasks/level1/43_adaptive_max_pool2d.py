"""2-D adaptive max pooling to a 7x5 grid from a map whose sides it does not divide."""

import torch
import torch.nn as nn

BATCH = 224
CHANNELS = 256
HEIGHT = 45
WIDTH = 62


class Model(nn.Module):
    def __init__(self, output_size):
        super().__init__()
        self.pool = nn.AdaptiveMaxPool2d(output_size)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [(7, 5)]
