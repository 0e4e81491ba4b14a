"""Small image classifier: three (conv, BatchNorm, ReLU, max-pool) stages, global average pool, linear head."""

import torch
import torch.nn as nn

BATCH = 112
IN_CHANNELS = 3
HEIGHT = 64
WIDTH = 64
CLASSES = 100


def _stage(in_channels, out_channels):
    bn = nn.BatchNorm2d(out_channels)
    with torch.no_grad():
        bn.running_mean.uniform_(-0.1, 0.1)
        bn.running_var.uniform_(0.5, 1.5)
    return nn.Sequential(nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False),
                         bn, nn.ReLU(), nn.MaxPool2d(2))


class Model(nn.Module):
    def __init__(self, in_channels, classes):
        super().__init__()
        self.features = nn.Sequential(_stage(in_channels, 32), _stage(32, 64), _stage(64, 128))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(128, classes)

    def forward(self, images):
        return self.head(torch.flatten(self.pool(self.features(images)), 1))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, CLASSES]
