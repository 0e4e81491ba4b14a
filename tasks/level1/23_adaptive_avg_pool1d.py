"""1-D adaptive average pooling to an output length that does not divide the input."""

import torch
import torch.nn as nn

BATCH = 304
CHANNELS = 256
LENGTH = 1000
OUTPUT_LENGTH = 48


class Model(nn.Module):
    def __init__(self, output_length):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool1d(output_length)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [OUTPUT_LENGTH]
