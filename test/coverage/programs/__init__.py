"""The front end's coverage suite: small PyTorch programs by op family.

Each program is a factory returning (module, example inputs) with tiny
shapes, registered under a family. `dynamic` names the inputs whose dim 0 is
a batch that may vary (exported once more with a torch.export Dim there);
`positive` asks for fresh float inputs in (0.1, 1.1], for programs whose
domain is positive (log, sqrt, pow). The modules are seeded and in eval
mode, so a program is the same computation every time it is built.
"""

import importlib
from dataclasses import dataclass
from typing import Callable, Optional, Tuple

import torch
from torch import nn

FAMILIES = ("activation", "elementwise", "reduction", "norm", "pooling", "conv", "matmul",
            "indexing", "shape", "mask", "embedding", "attention", "rnn", "block")


@dataclass(frozen=True)
class Program:
    name: str
    family: str
    factory: Callable
    dynamic: Optional[Tuple[int, ...]]  # inputs with a batch dim 0; None: static only
    positive: bool

    def build(self, seed=0):
        torch.manual_seed(seed)
        module, inputs = self.factory()
        return module.eval(), tuple(inputs)


PROGRAMS = {}


def program(family, name, dynamic=None, positive=False):
    """Registers a factory. dynamic=True: every input has the batch dim."""
    assert family in FAMILIES, family

    def register(factory):
        assert name not in PROGRAMS, f"two programs named {name}"
        PROGRAMS[name] = Program(name, family, factory,
                                 dynamic if dynamic is not True else "all", positive)
        return factory

    return register


def fn(family, name, inputs, dynamic=None, positive=False):
    """Registers `Fn(f)` on `inputs()` (a function returning a tuple)."""
    def register(f):
        program(family, name, dynamic, positive)(lambda: (Fn(f), inputs()))
        return f

    return register


class Fn(nn.Module):
    """A module computing `f(*inputs)`, for programs of torch functions."""

    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, *inputs):
        return self.f(*inputs)


def r(*shape):
    return torch.randn(*shape)


def load():
    """Every program of every family, by name."""
    for family in FAMILIES:
        importlib.import_module(f"{__name__}.{family}")
    return PROGRAMS
