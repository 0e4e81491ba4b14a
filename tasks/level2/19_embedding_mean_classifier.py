"""Bag-of-tokens classifier: embedding lookup, mean over the sequence, then a linear layer."""

import torch
import torch.nn as nn

VOCAB = 10000
DIM = 256
CLASSES = 50
BATCH = 4864
SEQ = 128


class Model(nn.Module):
    def __init__(self, vocab, dim, classes):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.classify = nn.Linear(dim, classes)

    def forward(self, ids):
        return self.classify(self.embed(ids).mean(dim=1))


def get_inputs():
    return [torch.randint(0, VOCAB, (BATCH, SEQ))]


def get_init_inputs():
    return [VOCAB, DIM, CLASSES]
