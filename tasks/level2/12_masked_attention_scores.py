"""Attention probabilities: scaled q k^T, an additive padding mask per key, then softmax."""

import torch
import torch.nn as nn

BATCH = 24  # a multiple of 4: get_inputs repeats four key lengths
HEADS = 8
SEQ = 384
HEAD_DIM = 64


class Model(nn.Module):
    def __init__(self, head_dim):
        super().__init__()
        self.scale = head_dim ** -0.5

    def forward(self, q, k, key_padding):
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale   # [B, H, T, T]
        # key_padding: [B, T], True where the key is padding; it broadcasts over heads and queries.
        scores = scores.masked_fill(key_padding[:, None, None, :], float("-inf"))
        return torch.softmax(scores, dim=-1)


def get_inputs():
    shape = (BATCH, HEADS, SEQ, HEAD_DIM)
    lengths = torch.tensor([SEQ, SEQ - 50, SEQ // 2, 17]).repeat(BATCH // 4)
    key_padding = torch.arange(SEQ)[None, :] >= lengths[:, None]
    return [torch.randn(shape), torch.randn(shape), key_padding]


def get_init_inputs():
    return [HEAD_DIM]
