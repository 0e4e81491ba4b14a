"""Embedding lookups, bags and positional embeddings."""

import torch
from torch import nn
from torch.nn import functional as F

from . import fn, program


def ids(high, *shape):
    return torch.randint(0, high, shape)


program("embedding", "embedding", dynamic=True)(lambda: (nn.Embedding(20, 8), (ids(20, 3, 5),)))
program("embedding", "embedding_padding_idx")(
    lambda: (nn.Embedding(20, 8, padding_idx=0), (ids(20, 4, 6),)))


class TokenAndPosition(nn.Module):
    def __init__(self, vocab=30, positions=16, dim=8):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(positions, dim)

    def forward(self, tokens):  # [B, T]
        t = tokens.shape[1]
        return self.tok(tokens) + self.pos(torch.arange(t))


program("embedding", "token_and_position", dynamic=True)(
    lambda: (TokenAndPosition(), (ids(30, 2, 7),)))
program("embedding", "embedding_bag_sum")(
    lambda: (nn.EmbeddingBag(20, 6, mode="sum"), (ids(20, 4, 3),)))
program("embedding", "embedding_bag_mean")(
    lambda: (nn.EmbeddingBag(20, 6, mode="mean"), (ids(20, 4, 3),)))
fn("embedding", "functional_embedding_scaled", lambda: (ids(12, 3, 4), torch.randn(12, 5)))(
    lambda i, w: F.embedding(i, w) * 5 ** 0.5)
fn("embedding", "one_hot_matmul", lambda: (ids(10, 6), torch.randn(10, 4)))(
    lambda i, w: F.one_hot(i, 10).float() @ w)
