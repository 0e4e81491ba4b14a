"""A GRU cell unrolled over a fixed number of steps, returning the final hidden state."""

import torch
import torch.nn as nn

BATCH = 896
STEPS = 16
INPUT_SIZE = 128
HIDDEN = 256


class Model(nn.Module):
    def __init__(self, input_size, hidden):
        super().__init__()
        self.hidden = hidden
        self.cell = nn.GRUCell(input_size, hidden)

    def forward(self, x, h0):
        # x: [B, T, I]; the loop length is the static sequence length, not data.
        h = h0
        for t in range(x.shape[1]):
            h = self.cell(x[:, t], h)
        return h


def get_inputs():
    return [torch.randn(BATCH, STEPS, INPUT_SIZE), torch.zeros(BATCH, HIDDEN)]


def get_init_inputs():
    return [INPUT_SIZE, HIDDEN]
