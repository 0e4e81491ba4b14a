"""Reductions over chosen dims, with and without keepdim, and softmax."""

import torch
from torch import nn

from . import fn, program, r


def one(*shape):
    return lambda: (r(*shape),)


fn("reduction", "sum_dim1", one(4, 6, 8), dynamic=True)(lambda x: x.sum(dim=1))
fn("reduction", "sum_last_keepdim", one(4, 6, 8), dynamic=True)(
    lambda x: x.sum(dim=-1, keepdim=True))
fn("reduction", "sum_two_dims", one(3, 4, 5, 6), dynamic=True)(lambda x: x.sum(dim=(1, 3)))
fn("reduction", "sum_all", one(5, 7))(lambda x: x.sum())
fn("reduction", "mean_dim0", one(6, 9))(lambda x: x.mean(dim=0))
fn("reduction", "mean_spatial", one(2, 3, 5, 5), dynamic=True)(lambda x: x.mean(dim=(2, 3)))
fn("reduction", "amax_amin", one(4, 9), dynamic=True)(
    lambda x: torch.amax(x, dim=1) - torch.amin(x, dim=1))
fn("reduction", "max_values_indices", one(4, 9), dynamic=True)(lambda x: torch.max(x, dim=1))
fn("reduction", "argmax", one(4, 9))(lambda x: torch.argmax(x, dim=-1))
fn("reduction", "argmin_keepdim", one(4, 9))(lambda x: torch.argmin(x, dim=0, keepdim=True))
fn("reduction", "prod_dim", one(4, 5))(lambda x: torch.prod(x * 0.5 + 1.0, dim=1))
fn("reduction", "var_unbiased", one(4, 12), dynamic=True)(lambda x: torch.var(x, dim=1))
fn("reduction", "std_biased", one(4, 12))(lambda x: torch.std(x, dim=-1, unbiased=False))
fn("reduction", "logsumexp", one(4, 12), dynamic=True)(lambda x: torch.logsumexp(x, dim=-1))
fn("reduction", "l2_norm_dim", one(4, 12))(lambda x: torch.linalg.vector_norm(x, dim=1))
fn("reduction", "l1_norm_all", one(4, 12))(lambda x: x.abs().sum())
fn("reduction", "cumsum", one(4, 8), dynamic=True)(lambda x: torch.cumsum(x, dim=1))
fn("reduction", "sort_values_indices", one(4, 8), dynamic=True)(
    lambda x: torch.sort(x, dim=1, descending=True))
fn("reduction", "topk", one(3, 4, 9))(lambda x: torch.topk(x, 3, dim=-1).values * 2)
fn("reduction", "argsort_dim0", one(6, 5))(lambda x: torch.argsort(x, dim=0))
fn("reduction", "any_all", one(4, 8))(
    lambda x: ((x > 1.0).any(dim=1).float() + (x > -2.0).all(dim=1).float()))
fn("reduction", "count_nonzero_like", one(4, 8))(lambda x: (x > 0).sum(dim=1))
program("reduction", "softmax_last", dynamic=True)(lambda: (nn.Softmax(dim=-1), (r(4, 17),)))
program("reduction", "softmax_dim1_4d", dynamic=True)(
    lambda: (nn.Softmax(dim=1), (r(2, 5, 3, 4),)))
program("reduction", "log_softmax", dynamic=True)(lambda: (nn.LogSoftmax(dim=-1), (r(4, 11),)))
fn("reduction", "softmin", one(4, 11))(lambda x: torch.nn.functional.softmin(x, dim=-1))
fn("reduction", "cross_entropy", lambda: (r(6, 10), torch.randint(0, 10, (6,))))(
    lambda logits, target: torch.nn.functional.cross_entropy(logits, target))
fn("reduction", "mse_loss", lambda: (r(6, 10), r(6, 10)))(
    lambda a, b: torch.nn.functional.mse_loss(a, b))

# A softmax whose temperature is a Python int (a kernel argument when dynamic).
fn("reduction", "softmax_int_temperature", lambda: (r(3, 7), 2), dynamic=True)(
    lambda x, n: torch.softmax(x * n, dim=-1))
