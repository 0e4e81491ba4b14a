"""Attention written out and through scaled_dot_product_attention, with masks."""

import math

import torch
from torch import nn
from torch.nn import functional as F

from . import fn, program, r


def qkv(b=2, h=2, t=6, d=8):
    return lambda: (r(b, h, t, d), r(b, h, t, d), r(b, h, t, d))


def attend(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # [B, H, T, T]
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


fn("attention", "manual_attention", qkv(), dynamic=True)(attend)
fn("attention", "manual_causal", qkv(), dynamic=True)(
    lambda q, k, v: attend(q, k, v, torch.ones(6, 6, dtype=torch.bool).tril()))
fn("attention", "manual_additive_mask", lambda: (*qkv()(), r(6, 6)))(
    lambda q, k, v, bias: torch.softmax(q @ k.transpose(-2, -1) * 0.35 + bias, dim=-1) @ v)
fn("attention", "sdpa", qkv(), dynamic=True)(F.scaled_dot_product_attention)
fn("attention", "sdpa_causal", qkv(), dynamic=True)(
    lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True))
fn("attention", "sdpa_bool_mask", lambda: (*qkv()(), torch.rand(6, 6) > 0.3))(
    lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m | torch.eye(6).bool()))
fn("attention", "sdpa_scale", qkv())(
    lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=0.2))
fn("attention", "cross_attention", lambda: (r(2, 2, 4, 8), r(2, 2, 7, 8), r(2, 2, 7, 8)))(attend)


class MultiHead(nn.Module):
    """Multi-head self-attention from linear projections, causal when asked."""

    def __init__(self, dim=16, heads=4, causal=False, sdpa=False):
        super().__init__()
        self.heads, self.causal, self.sdpa = heads, causal, sdpa
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):  # [B, T, D]
        b, t, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (y.reshape(b, t, self.heads, d // self.heads).transpose(1, 2)
                   for y in (q, k, v))  # [B, H, T, D/H]
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        else:
            mask = torch.ones(t, t, dtype=torch.bool).tril() if self.causal else None
            y = attend(q, k, v, mask)
        return self.out(y.transpose(1, 2).reshape(b, t, d))


program("attention", "multihead_manual", dynamic=True)(lambda: (MultiHead(), (r(2, 5, 16),)))
program("attention", "multihead_manual_causal", dynamic=True)(
    lambda: (MultiHead(causal=True), (r(2, 5, 16),)))
program("attention", "multihead_sdpa_causal", dynamic=True)(
    lambda: (MultiHead(causal=True, sdpa=True), (r(2, 5, 16),)))


class TorchMha(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(16, 2, batch_first=True)

    def forward(self, x):
        return self.mha(x, x, x, need_weights=False)[0]


program("attention", "nn_multihead_attention", dynamic=True)(lambda: (TorchMha(), (r(2, 5, 16),)))


class GroupedQuery(nn.Module):
    """Four query heads sharing two key/value heads."""

    def forward(self, q, k, v):  # q [B, 4, T, D], k, v [B, 2, T, D]
        k = k.repeat_interleave(2, dim=1)
        v = v.repeat_interleave(2, dim=1)
        return attend(q, k, v)


program("attention", "grouped_query")(
    lambda: (GroupedQuery(), (r(2, 4, 5, 8), r(2, 2, 5, 8), r(2, 2, 5, 8))))
