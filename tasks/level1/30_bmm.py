"""Batched matrix product of two 3-D tensors."""

import torch
import torch.nn as nn

BATCH = 960
M = 200
K = 160
N = 288


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.bmm(a, b)


def get_inputs():
    return [torch.randn(BATCH, M, K), torch.randn(BATCH, K, N)]


def get_init_inputs():
    return []
