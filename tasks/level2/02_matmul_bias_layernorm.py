"""Matrix product plus bias, then LayerNorm over the output features."""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 26752
IN_FEATURES = 512
OUT_FEATURES = 640


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) / in_features ** 0.5)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)
        self.norm = nn.LayerNorm(out_features)

    def forward(self, x):
        return self.norm(torch.matmul(x, self.weight) + self.bias)


def get_inputs():
    return [torch.randn(TOKENS, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
