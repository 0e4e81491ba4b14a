"""Two-layer batch-first LSTM over a sequence, then a linear classifier on the last layer's final hidden state."""

import torch
import torch.nn as nn

BATCH = 304
SEQ = 40
INPUT_SIZE = 96
HIDDEN = 192
CLASSES = 10


class Model(nn.Module):
    def __init__(self, input_size, hidden, classes):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden, num_layers=2, batch_first=True)
        self.classify = nn.Linear(hidden, classes)

    def forward(self, x):
        _, (h_n, _) = self.lstm(x)                                    # h_n: [layers, B, H]
        return self.classify(h_n[-1])


def get_inputs():
    return [torch.randn(BATCH, SEQ, INPUT_SIZE)]


def get_init_inputs():
    return [INPUT_SIZE, HIDDEN, CLASSES]
