"""GroupNorm with 12 groups over a 4-D feature map."""

import torch
import torch.nn as nn

BATCH = 120
CHANNELS = 144
HEIGHT = 56
WIDTH = 56
GROUPS = 12


class Model(nn.Module):
    def __init__(self, groups, channels):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.2, 0.2)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) + 1.0]


def get_init_inputs():
    return [GROUPS, CHANNELS]
