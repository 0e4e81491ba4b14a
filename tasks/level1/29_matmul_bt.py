"""Matrix product with a transposed right operand: a @ b.T."""

import torch
import torch.nn as nn

M = 11456
K = 768
N = 1000


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a @ b.t()


def get_inputs():
    return [torch.randn(M, K), torch.randn(N, K)]


def get_init_inputs():
    return []
