"""Contrastive similarity logits: L2-normalise two embedding sets, matrix product, scale by a temperature."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

PAIRS = 4160
DIM = 512
TEMPERATURE = 0.07


class Model(nn.Module):
    def __init__(self, temperature):
        super().__init__()
        self.log_scale = nn.Parameter(torch.tensor(math.log(1.0 / temperature)))

    def forward(self, image_emb, text_emb):
        image_emb = F.normalize(image_emb, dim=-1)
        text_emb = F.normalize(text_emb, dim=-1)
        return self.log_scale.exp() * image_emb @ text_emb.t()      # [N, N]


def get_inputs():
    return [torch.randn(PAIRS, DIM), torch.randn(PAIRS, DIM)]


def get_init_inputs():
    return [TEMPERATURE]
