"""Linear layer with bias followed by tanh-approximated GELU."""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 7424
IN_FEATURES = 768
OUT_FEATURES = 1536


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return F.gelu(self.fc(x), approximate="tanh")


def get_inputs():
    return [torch.randn(TOKENS, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
