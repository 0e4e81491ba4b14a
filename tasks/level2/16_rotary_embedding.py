"""Rotary position embedding applied to queries and keys (rotate-half form, precomputed cos/sin)."""

import torch
import torch.nn as nn

BATCH = 28
HEADS = 16
SEQ = 512
HEAD_DIM = 64
BASE = 10000.0


def _rotate_half(x):
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


class Model(nn.Module):
    def __init__(self, seq, head_dim, base):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
        angles = torch.outer(torch.arange(seq).float(), inv_freq)   # [T, D/2]
        angles = torch.cat((angles, angles), dim=-1)                 # [T, D]
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, q, k):
        q_rot = q * self.cos + _rotate_half(q) * self.sin
        k_rot = k * self.cos + _rotate_half(k) * self.sin
        return q_rot, k_rot


def get_inputs():
    shape = (BATCH, HEADS, SEQ, HEAD_DIM)
    return [torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return [SEQ, HEAD_DIM, BASE]
