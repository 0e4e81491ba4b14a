"""Highway-style gating: y = g * relu(W_h x) + (1 - g) * x with g = sigmoid(W_g x)."""

import torch
import torch.nn as nn

TOKENS = 16704
DIM = 512


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.transform = nn.Linear(dim, dim)
        self.gate = nn.Linear(dim, dim)
        with torch.no_grad():
            # A negative gate bias starts the layer close to the identity, as highway networks do.
            self.gate.bias.fill_(-1.0)

    def forward(self, x):
        g = torch.sigmoid(self.gate(x))
        return g * torch.relu(self.transform(x)) + (1.0 - g) * x


def get_inputs():
    return [torch.randn(TOKENS, DIM)]


def get_init_inputs():
    return [DIM]
