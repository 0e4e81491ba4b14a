"""Dense (soft) mixture of experts: a softmax router weights the outputs of four GELU MLP experts, all evaluated."""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 8384
DIM = 256
HIDDEN = 512
EXPERTS = 4


class Model(nn.Module):
    def __init__(self, dim, hidden, experts):
        super().__init__()
        self.router = nn.Linear(dim, experts, bias=False)
        # Expert weights stacked, so that every expert runs as one batched product.
        self.w_in = nn.Parameter(torch.randn(experts, dim, hidden) / dim ** 0.5)
        self.w_out = nn.Parameter(torch.randn(experts, hidden, dim) / hidden ** 0.5)

    def forward(self, x):
        gates = torch.softmax(self.router(x), dim=-1)                 # [N, E]
        h = F.gelu(torch.einsum("nd,edh->enh", x, self.w_in))          # [E, N, Hd]
        y = torch.einsum("enh,ehd->end", h, self.w_out)               # [E, N, D]
        return torch.einsum("ne,end->nd", gates, y)


def get_inputs():
    return [torch.randn(TOKENS, DIM)]


def get_init_inputs():
    return [DIM, HIDDEN, EXPERTS]
