"""Slicing, selecting, gather and scatter, advanced indexing."""

import torch
from torch import nn

from . import fn, program, r


def ints(high, *shape):
    return torch.randint(0, high, shape)


fn("indexing", "slice_basic", lambda: (r(6, 10),), dynamic=True)(lambda x: x[:, 2:7])
fn("indexing", "slice_step", lambda: (r(6, 10),))(lambda x: x[1::2, ::3])
fn("indexing", "slice_negative", lambda: (r(6, 10),), dynamic=True)(lambda x: x[..., -4:] * 2)
fn("indexing", "narrow_add", lambda: (r(4, 12),))(
    lambda x: x.narrow(1, 0, 6) + x.narrow(1, 6, 6))
fn("indexing", "select_int", lambda: (r(4, 5, 6),))(lambda x: x[:, 2, :5] + x.select(2, 0))
fn("indexing", "index_select", lambda: (r(8, 5), ints(8, 4)))(
    lambda x, i: torch.index_select(x, 0, i))
fn("indexing", "gather_dim1", lambda: (r(4, 7), ints(7, 4, 3)))(
    lambda x, i: torch.gather(x, 1, i))
fn("indexing", "take_along_dim", lambda: (r(4, 7), ints(7, 4, 2)))(
    lambda x, i: torch.take_along_dim(x, i, dim=1))
fn("indexing", "advanced_index_rows", lambda: (r(8, 5), ints(8, 3)))(lambda x, i: x[i])
fn("indexing", "advanced_index_two", lambda: (r(6, 7), ints(6, 4), ints(7, 4)))(
    lambda x, i, j: x[i, j])


class ScatterRows(nn.Module):
    """Scatter with a fixed index (unique per row, so the result is defined)."""

    def __init__(self, add):
        super().__init__()
        self.add = add
        self.register_buffer("index", torch.stack([torch.randperm(6)[:4] for _ in range(3)]))

    def forward(self, base, src):
        if self.add:
            return base.scatter_add(1, self.index, src)
        return base.scatter(1, self.index, src)


program("indexing", "scatter")(lambda: (ScatterRows(False), (r(3, 6), r(3, 4))))
program("indexing", "scatter_add")(lambda: (ScatterRows(True), (r(3, 6), r(3, 4))))
fn("indexing", "index_add", lambda: (r(5, 3), r(4, 3)))(
    lambda x, s: x.index_add(0, torch.tensor([0, 2, 4, 1]), s))
fn("indexing", "index_put_rows", lambda: (r(6, 4), r(2, 4)))(
    lambda x, v: torch.index_put(x, (torch.tensor([1, 4]),), v))
fn("indexing", "slice_assign", lambda: (r(4, 8), r(4, 3)))(
    lambda x, v: torch.slice_scatter(x, v, dim=1, start=2, end=5))
fn("indexing", "select_scatter", lambda: (r(4, 8), r(8)))(
    lambda x, v: torch.select_scatter(x, v, 0, 1))
fn("indexing", "scatter_reduce_amax_mean", lambda: (r(3, 6), r(3, 4)))(
    lambda x, u: x.scatter_reduce(1, torch.tensor([[0, 2, 0, 5], [1, 1, 1, 1], [4, 3, 2, 1]]), u,
                                  reduce="amax")
    + x.scatter_reduce(1, torch.tensor([[1, 1, 0, 0], [5, 4, 5, 4], [0, 1, 2, 3]]), u,
                       reduce="mean", include_self=False))
fn("indexing", "index_reduce_prod", lambda: (r(5, 3), r(4, 3)))(
    lambda x, u: x.index_reduce(0, torch.tensor([4, 0, 4, 2]), u, reduce="prod"))


def _indices(*shape, high):
    """An index input of values in [0, high), `high - 1` among them (fresh
    inputs draw up to the example's largest)."""
    i = torch.randint(0, high, shape)
    i.view(-1)[0] = high - 1
    return i


# Scatters that combine by product, max or min along a dim after a batch:
# the indexed dims flatten into one of the batch's size times the others.
fn("indexing", "scatter_reduce_batched", lambda: (r(4, 5), _indices(4, 3, high=5), r(4, 3)),
   dynamic=True)(
    lambda x, i, u: x.scatter_reduce(1, i, u, reduce="amax")
    + x.scatter_reduce(1, i, u, reduce="prod"))
fn("indexing", "index_reduce_batched", lambda: (r(4, 5), r(4, 3)), dynamic=True)(
    lambda x, u: x.index_reduce(1, torch.tensor([4, 0, 4]), u, reduce="amin"))



def _written_diagonal(x, u):
    y = x.clone()
    torch.diagonal(y, 1, 1, 2).copy_(u)  # a diagonal of the last two dims
    return y


def _filled_diagonal(x):
    y = x.clone()
    y.fill_diagonal_(0.5)  # a strided write into the storage
    return y - x


def _arange_into_strided_slice(x):
    y = x.clone()
    y[1::2, ::3] = torch.arange(6.0).view(2, 3)
    return y * 2


fn("indexing", "write_into_diagonal", lambda: (r(3, 5, 5), r(3, 4)))(_written_diagonal)
fn("indexing", "fill_diagonal", lambda: (r(5, 7),))(_filled_diagonal)
fn("indexing", "arange_into_strided_slice", lambda: (r(5, 8),))(_arange_into_strided_slice)
