"""Masked mean pooling over a padded sequence (float mask), a linear layer, then tanh (a sentence pooler)."""

import torch
import torch.nn as nn

BATCH = 544
SEQ = 256
HIDDEN = 768


class Model(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)

    def forward(self, states, mask):
        # mask: [B, T], 1.0 for real tokens and 0.0 for padding.
        summed = (states * mask.unsqueeze(-1)).sum(dim=1)
        count = mask.sum(dim=1, keepdim=True).clamp_min(1.0)
        return torch.tanh(self.dense(summed / count))


def get_inputs():
    lengths = torch.randint(8, SEQ + 1, (BATCH,))
    mask = (torch.arange(SEQ)[None, :] < lengths[:, None]).float()
    return [torch.randn(BATCH, SEQ, HIDDEN), mask]


def get_init_inputs():
    return [HIDDEN]
