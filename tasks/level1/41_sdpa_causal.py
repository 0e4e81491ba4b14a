"""Causal scaled dot-product attention (torch's fused operator) over multi-head inputs."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 44
HEADS = 12
SEQ = 512
HEAD_DIM = 64


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def get_inputs():
    shape = (BATCH, HEADS, SEQ, HEAD_DIM)
    return [torch.randn(shape), torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return []
