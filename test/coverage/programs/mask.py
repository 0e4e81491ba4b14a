"""Masks and selection: where, masked_fill, triangular masks, boolean logic."""

import torch

from . import fn, r


def bools(*shape):
    return torch.rand(*shape) > 0.5


fn("mask", "where_tensor", lambda: (bools(4, 6), r(4, 6), r(4, 6)), dynamic=True)(torch.where)
fn("mask", "where_scalar", lambda: (r(4, 6),), dynamic=True)(
    lambda x: torch.where(x > 0, x, 0.1 * x))
fn("mask", "where_broadcast", lambda: (r(4, 6), r(6)), dynamic=(0,))(
    lambda x, b: torch.where(x > b, x, b))
fn("mask", "masked_fill_input_mask", lambda: (r(4, 6), bools(4, 6)))(
    lambda x, m: x.masked_fill(m, -1.0))
fn("mask", "masked_fill_computed", lambda: (r(4, 6),), dynamic=True)(
    lambda x: x.masked_fill(x.abs() < 0.3, 0.0))
fn("mask", "tril", lambda: (r(6, 6),))(torch.tril)
fn("mask", "triu_diag1", lambda: (r(5, 7),))(lambda x: torch.triu(x, diagonal=1))
fn("mask", "causal_mask_fill", lambda: (r(2, 5, 5),), dynamic=True)(
    lambda s: s.masked_fill(torch.ones(5, 5, dtype=torch.bool).triu(1), float("-inf")))
fn("mask", "bool_logic", lambda: (r(4, 6), r(4, 6)))(
    lambda a, b: ((a > 0) & (b < 0) | ~(a > b)).float())
fn("mask", "mask_multiply", lambda: (r(4, 6), bools(4, 6)), dynamic=True)(
    lambda x, m: x * m)
fn("mask", "relu_via_mask", lambda: (r(4, 6),))(lambda x: x * (x > 0).to(x.dtype))
fn("mask", "masked_mean", lambda: (r(4, 6), bools(4, 6)))(
    lambda x, m: (x * m).sum(dim=1) / (m.sum(dim=1) + 1))
