"""Causal attention written out: softmax(q k^T / sqrt(d) + causal mask) v, with the mask as a buffer."""

import torch
import torch.nn as nn

BATCH = 12
HEADS = 8
SEQ = 512
HEAD_DIM = 64


class Model(nn.Module):
    def __init__(self, seq, head_dim):
        super().__init__()
        self.scale = head_dim ** -0.5
        future = torch.triu(torch.ones(seq, seq, dtype=torch.bool), diagonal=1)
        self.register_buffer("future", future, persistent=False)

    def forward(self, q, k, v):
        scores = (q @ k.transpose(-2, -1)) * self.scale            # [B, H, T, T]
        scores = scores.masked_fill(self.future, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v                   # [B, H, T, D]


def get_inputs():
    shape = (BATCH, HEADS, SEQ, HEAD_DIM)
    return [torch.randn(shape), torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return [SEQ, HEAD_DIM]
