"""RMSNorm (root-mean-square normalisation with a learned scale) over the hidden dimension."""

import torch
import torch.nn as nn

BATCH = 12
SEQ = 1000
HIDDEN = 1536


class Model(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.norm = nn.RMSNorm(hidden, eps=1e-5)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN)]


def get_init_inputs():
    return [HIDDEN]
