"""Linear layer with bias applied to a batch of sequences (a batched GEMM over the last dim)."""

import torch
import torch.nn as nn

BATCH = 72
SEQ = 192
IN_FEATURES = 1024
OUT_FEATURES = 640


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.proj = nn.Linear(in_features, out_features)

    def forward(self, x):
        return self.proj(x)


def get_inputs():
    return [torch.randn(BATCH, SEQ, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
