"""Llama-style decoder block: RMSNorm, causal grouped-query attention with rotary embeddings, RMSNorm, SwiGLU MLP."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 12
SEQ = 256
DIM = 512
HEADS = 8
KV_HEADS = 2
HIDDEN = 1408
ROPE_BASE = 10000.0


def _rotate_half(x):
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


class Model(nn.Module):
    def __init__(self, dim, heads, kv_heads, hidden, seq, rope_base):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.attn_norm = nn.RMSNorm(dim, eps=1e-5)
        self.wq = nn.Linear(dim, heads * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(heads * self.head_dim, dim, bias=False)
        self.mlp_norm = nn.RMSNorm(dim, eps=1e-5)
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        inv_freq = 1.0 / (rope_base ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
        angles = torch.outer(torch.arange(seq).float(), inv_freq)
        angles = torch.cat((angles, angles), dim=-1)                  # [T, Dh]
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def rope(self, x):
        return x * self.cos + _rotate_half(x) * self.sin

    def attention(self, x):
        b, t, _ = x.shape
        q = self.wq(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)     # [B, H, T, Dh]
        k = self.wk(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)  # [B, KV, T, Dh]
        v = self.wv(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = self.rope(q), self.rope(k)
        repeat = self.heads // self.kv_heads
        k = k.repeat_interleave(repeat, dim=1)                        # [B, H, T, Dh]
        v = v.repeat_interleave(repeat, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(y.transpose(1, 2).reshape(b, t, -1))

    def forward(self, x):
        x = x + self.attention(self.attn_norm(x))
        h = self.mlp_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


def get_inputs():
    return [torch.randn(BATCH, SEQ, DIM)]


def get_init_inputs():
    return [DIM, HEADS, KV_HEADS, HIDDEN, SEQ, ROPE_BASE]
