"""Residual add of a sublayer output, then LayerNorm (a post-norm transformer's add & norm)."""

import torch
import torch.nn as nn

BATCH = 256
SEQ = 256
HIDDEN = 1024


class Model(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(hidden)
        with torch.no_grad():
            self.norm.weight.uniform_(0.8, 1.2)
            self.norm.bias.uniform_(-0.1, 0.1)

    def forward(self, residual, sublayer_out):
        return self.norm(residual + sublayer_out)


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN), torch.randn(BATCH, SEQ, HIDDEN) * 0.5]


def get_init_inputs():
    return [HIDDEN]
