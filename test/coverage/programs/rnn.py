"""Recurrent cells (torch's and written out) and short unrolled sequences."""

import torch
from torch import nn

from . import program, r

program("rnn", "rnn_cell_tanh", dynamic=True)(
    lambda: (nn.RNNCell(6, 8), (r(3, 6), r(3, 8))))
program("rnn", "rnn_cell_relu", dynamic=True)(
    lambda: (nn.RNNCell(6, 8, nonlinearity="relu"), (r(3, 6), r(3, 8))))
program("rnn", "gru_cell", dynamic=True)(lambda: (nn.GRUCell(6, 8), (r(3, 6), r(3, 8))))


class LstmCell(nn.Module):
    """nn.LSTMCell, returning both states."""

    def __init__(self):
        super().__init__()
        self.cell = nn.LSTMCell(6, 8)

    def forward(self, x, h, c):
        return self.cell(x, (h, c))


program("rnn", "lstm_cell", dynamic=True)(lambda: (LstmCell(), (r(3, 6), r(3, 8), r(3, 8))))


class LstmCellWritten(nn.Module):
    """An LSTM cell gate by gate, one fused projection of [x, h]."""

    def __init__(self, inputs=6, hidden=8):
        super().__init__()
        self.gates = nn.Linear(inputs + hidden, 4 * hidden)

    def forward(self, x, h, c):
        i, f, g, o = self.gates(torch.cat([x, h], dim=-1)).chunk(4, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c


program("rnn", "lstm_cell_written", dynamic=True)(
    lambda: (LstmCellWritten(), (r(3, 6), r(3, 8), r(3, 8))))


class Unrolled(nn.Module):
    """A cell run over a short sequence in a Python loop (unrolled by export)."""

    def __init__(self, cell):
        super().__init__()
        self.cell = cell

    def forward(self, xs, h):  # xs [B, T, I]
        for t in range(xs.shape[1]):
            h = self.cell(xs[:, t], h)
        return h


program("rnn", "gru_unrolled_4", dynamic=True)(
    lambda: (Unrolled(nn.GRUCell(5, 6)), (r(2, 4, 5), r(2, 6))))
program("rnn", "rnn_unrolled_3")(lambda: (Unrolled(nn.RNNCell(5, 6)), (r(2, 3, 5), r(2, 6))))


class Seq(nn.Module):
    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x):
        return self.rnn(x)[0]


program("rnn", "nn_lstm", dynamic=True)(
    lambda: (Seq(nn.LSTM(5, 6, batch_first=True)), (r(2, 4, 5),)))
program("rnn", "nn_gru")(lambda: (Seq(nn.GRU(5, 6, batch_first=True)), (r(2, 4, 5),)))
