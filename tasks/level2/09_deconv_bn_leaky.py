"""Transposed convolution upsampling by 2, BatchNorm2d (inference), LeakyReLU(0.2): a GAN generator stage."""

import torch
import torch.nn as nn

BATCH = 68
IN_CHANNELS = 128
OUT_CHANNELS = 64
HEIGHT = 32
WIDTH = 32


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, 4, stride=2, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)
        self.act = nn.LeakyReLU(0.2)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.1, 0.1)
            self.bn.running_var.uniform_(0.5, 1.5)

    def forward(self, z):
        return self.act(self.bn(self.deconv(z)))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
