"""Cosine similarity of two feature maps along the channel dimension, per pixel."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 28
CHANNELS = 128
HEIGHT = 64
WIDTH = 80


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return F.cosine_similarity(a, b, dim=1, eps=1e-6)


def get_inputs():
    a = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    return [a, a + torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
