"""Embedding lookup of a batch of token ids in a learned table."""

import torch
import torch.nn as nn

VOCAB = 12000
DIM = 320
BATCH = 976
SEQ = 512


class Model(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.table = nn.Embedding(vocab, dim)

    def forward(self, ids):
        return self.table(ids)


def get_inputs():
    return [torch.randint(0, VOCAB, (BATCH, SEQ))]


def get_init_inputs():
    return [VOCAB, DIM]
