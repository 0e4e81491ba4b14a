"""Example PyTorch programs for the README's main job and the docs."""

import torch
from torch import nn


class SmallConvNet(nn.Module):
    """conv + bias + relu, a pooled linear head with a GELU, and a softmax:
    one single-op, one fusion and one reduction request at each level."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, kernel_size=3, padding=1)
        self.fc = nn.Linear(8 * 4 * 4, 32)
        self.out = nn.Linear(32, 10)

    def forward(self, x):
        x = torch.relu(self.conv(x))                 # [2, 8, 8, 8]
        x = nn.functional.max_pool2d(x, 2)           # [2, 8, 4, 4]
        x = nn.functional.gelu(self.fc(x.flatten(1)))  # [2, 32]
        return torch.softmax(self.out(x), dim=-1)    # [2, 10]


EXAMPLES = {
    "convnet": lambda: (SmallConvNet().eval(), (torch.randn(2, 3, 8, 8),)),
}


def build(name, seed=0):
    """Returns (module, example inputs) of example `name`, seeded."""
    torch.manual_seed(seed)
    return EXAMPLES[name]()
