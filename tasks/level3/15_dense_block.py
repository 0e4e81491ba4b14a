"""DenseNet dense block: four (BatchNorm, ReLU, 3x3 conv) layers, each seeing the concatenation of all earlier outputs."""

import torch
import torch.nn as nn

BATCH = 68
IN_CHANNELS = 64
GROWTH = 32
LAYERS = 4
HEIGHT = 32
WIDTH = 32


def _layer(in_channels, growth):
    bn = nn.BatchNorm2d(in_channels)
    with torch.no_grad():
        bn.running_mean.uniform_(-0.1, 0.1)
        bn.running_var.uniform_(0.5, 1.5)
    return nn.Sequential(bn, nn.ReLU(), nn.Conv2d(in_channels, growth, 3, padding=1, bias=False))


class Model(nn.Module):
    def __init__(self, in_channels, growth, layers):
        super().__init__()
        self.layers = nn.ModuleList(_layer(in_channels + i * growth, growth) for i in range(layers))

    def forward(self, x):
        features = [x]
        for layer in self.layers:
            features.append(layer(torch.cat(features, dim=1)))
        return torch.cat(features, dim=1)                             # [B, C + L * G, H, W]


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, GROWTH, LAYERS]
