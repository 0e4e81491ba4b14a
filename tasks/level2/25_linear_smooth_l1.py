"""Box regression head and loss: a linear layer on ROI features, then smooth L1 (beta 1/9) against targets."""

import torch
import torch.nn as nn
import torch.nn.functional as F

ROIS = 106816
FEATURES = 1024
OUTPUTS = 4 * 20
BETA = 1.0 / 9.0


class Model(nn.Module):
    def __init__(self, features, outputs, beta):
        super().__init__()
        self.regress = nn.Linear(features, outputs)
        self.beta = beta

    def forward(self, roi_features, targets):
        return F.smooth_l1_loss(self.regress(roi_features), targets, beta=self.beta)


def get_inputs():
    return [torch.randn(ROIS, FEATURES), torch.randn(ROIS, OUTPUTS) * 0.5]


def get_init_inputs():
    return [FEATURES, OUTPUTS, BETA]
