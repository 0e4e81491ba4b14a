"""Decoder cross-attention sublayer: queries from x, keys and values from an encoder context (nn.MultiheadAttention), add & LayerNorm."""

import torch
import torch.nn as nn

BATCH = 60
QUERY_LEN = 128
CONTEXT_LEN = 320
DIM = 256
HEADS = 4


class Model(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x, context):
        attended, _ = self.attn(x, context, context, need_weights=False)
        return self.norm(x + attended)


def get_inputs():
    return [torch.randn(BATCH, QUERY_LEN, DIM), torch.randn(BATCH, CONTEXT_LEN, DIM)]


def get_init_inputs():
    return [DIM, HEADS]
