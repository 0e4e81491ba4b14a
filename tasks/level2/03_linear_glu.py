"""Linear projection to twice the width, then a gated linear unit (GLU) over the last dim."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 48
SEQ = 160
IN_FEATURES = 640
HIDDEN = 896


class Model(nn.Module):
    def __init__(self, in_features, hidden):
        super().__init__()
        self.fc = nn.Linear(in_features, 2 * hidden)

    def forward(self, x):
        return F.glu(self.fc(x), dim=-1)


def get_inputs():
    return [torch.randn(BATCH, SEQ, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, HIDDEN]
