"""torch.nn.TransformerEncoderLayer (post-norm, ReLU, batch-first) on a batch of sequences."""

import torch
import torch.nn as nn

BATCH = 84
SEQ = 128
DIM = 256
HEADS = 8
FEEDFORWARD = 1024


class Model(nn.Module):
    def __init__(self, dim, heads, feedforward):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=feedforward,
                                                dropout=0.0, batch_first=True)

    def forward(self, x):
        return self.layer(x)


def get_inputs():
    return [torch.randn(BATCH, SEQ, DIM)]


def get_init_inputs():
    return [DIM, HEADS, FEEDFORWARD]
