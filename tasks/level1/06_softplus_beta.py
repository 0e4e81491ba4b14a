"""Softplus with a non-default beta and threshold."""

import torch
import torch.nn as nn
import torch.nn.functional as F

ROWS = 44800
COLS = 1800
BETA = 1.5
THRESHOLD = 12.0


class Model(nn.Module):
    def __init__(self, beta, threshold):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, x):
        return F.softplus(x, beta=self.beta, threshold=self.threshold)


def get_inputs():
    # Wide enough that some inputs cross the linear-region threshold (beta * x > threshold).
    return [torch.randn(ROWS, COLS) * 6.0]


def get_init_inputs():
    return [BETA, THRESHOLD]
