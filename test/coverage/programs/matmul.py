"""Matrix products: mm, bmm, broadcast matmul, linear, addmm, einsum, outer."""

import torch
from torch import nn

from . import fn, program, r

fn("matmul", "mm", lambda: (r(6, 8), r(8, 5)), dynamic=(0,))(torch.mm)
fn("matmul", "mm_transposed_rhs", lambda: (r(6, 8), r(5, 8)))(lambda a, b: a @ b.t())
fn("matmul", "mm_transposed_lhs", lambda: (r(8, 6), r(8, 5)))(lambda a, b: a.t() @ b)
fn("matmul", "bmm", lambda: (r(3, 6, 8), r(3, 8, 4)), dynamic=True)(torch.bmm)
fn("matmul", "matmul_3d_2d", lambda: (r(2, 6, 8), r(8, 5)), dynamic=(0,))(torch.matmul)
fn("matmul", "matmul_4d", lambda: (r(2, 3, 5, 8), r(2, 3, 8, 4)), dynamic=True)(torch.matmul)
fn("matmul", "matmul_broadcast_batch", lambda: (r(2, 3, 5, 8), r(3, 8, 4)))(torch.matmul)
fn("matmul", "mv", lambda: (r(6, 8), r(8)))(torch.mv)
fn("matmul", "dot", lambda: (r(16), r(16)))(torch.dot)
fn("matmul", "outer", lambda: (r(6), r(5)))(torch.outer)
fn("matmul", "addmm", lambda: (r(5), r(6, 8), r(8, 5)))(
    lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0))
fn("matmul", "baddbmm", lambda: (r(2, 4, 3), r(2, 4, 6), r(2, 6, 3)), dynamic=True)(
    lambda c, a, b: torch.baddbmm(c, a, b))
fn("matmul", "einsum_bij_bjk", lambda: (r(2, 4, 6), r(2, 6, 3)), dynamic=True)(
    lambda a, b: torch.einsum("bij,bjk->bik", a, b))
fn("matmul", "einsum_contract_two", lambda: (r(3, 4, 5), r(4, 5, 6)))(
    lambda a, b: torch.einsum("ijk,jkl->il", a, b))
program("matmul", "linear", dynamic=True)(lambda: (nn.Linear(12, 7), (r(5, 12),)))
program("matmul", "linear_no_bias_3d", dynamic=True)(
    lambda: (nn.Linear(12, 7, bias=False), (r(2, 5, 12),)))
program("matmul", "bilinear")(lambda: (nn.Bilinear(4, 5, 3), (r(6, 4), r(6, 5))))
fn("matmul", "int_matmul", lambda: (torch.randint(0, 5, (4, 6)), torch.randint(0, 5, (6, 3))))(
    torch.matmul)
