"""Language-model head and loss: hidden states times a vocabulary matrix, then mean cross-entropy."""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 4224
HIDDEN = 256
VOCAB = 8192


class Model(nn.Module):
    def __init__(self, hidden, vocab):
        super().__init__()
        self.head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, hidden_states, targets):
        logits = self.head(hidden_states)                            # [N, V]
        return F.cross_entropy(logits, targets)


def get_inputs():
    return [torch.randn(TOKENS, HIDDEN), torch.randint(0, VOCAB, (TOKENS,))]


def get_init_inputs():
    return [HIDDEN, VOCAB]
