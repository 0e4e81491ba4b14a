"""LayerNorm with learned affine parameters over the hidden dimension."""

import torch
import torch.nn as nn

BATCH = 176
SEQ = 384
HIDDEN = 1280


class Model(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=1e-6)
        with torch.no_grad():
            # Non-trivial affine parameters, so that they take part in the result.
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.2, 0.2)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN) * 1.7 + 0.3]


def get_init_inputs():
    return [HIDDEN]
