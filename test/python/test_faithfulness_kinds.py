"""Reference programs compute what the function computes, kind by kind.

A corpus of small PyTorch programs, each exercising one way a reference
program can drift from the function it was rendered from: pooling windows
with padding and ceil mode, reshapes to and from 0-d tensors, integer,
unsigned and mixed dtypes (division rounding, promotion, result dtype),
index-dependent generics (masks, arange, one_hot), normalizations that
plan as several steps, and outputs that are inputs, views or constants. Each program is exported with torch-mlir, outlined
and scaffolded at op, fusion and function granularity, planned, and run
through both backends (the printed Python and the ATen executor); the
outputs must equal eager PyTorch's: the same dtype and shape, integers
exactly and floats within 1e-5 relative; half-precision results as close
to the function run in float64 as eager's, or within rounding.
"""

import copy
import json
import sys

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from build_tree import SOURCE_ROOT, tool
from plan_checks import run_aten

sys.path.insert(0, str(SOURCE_ROOT / "test" / "torch_models"))

from dice.plan import run_plan  # noqa: E402
from dice.torch_mlir_import import export_linalg_on_tensors  # noqa: E402

GRANULARITIES = ("op", "fusion", "function")
MAX_RELATIVE_ERROR = 1e-5


class Lambda(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *inputs):
        return self.fn(*inputs)


def floats(*shape):
    return lambda g: torch.randn(shape, generator=g)


def ints(*shape, dtype=torch.int64, low=-50, high=50, nonzero=False):
    def draw(g):
        x = torch.randint(low, high, shape, generator=g).to(dtype)
        if nonzero:
            x = torch.where(x == 0, torch.ones_like(x), x)
        return x
    return draw


CASES = {}


def case(name, module, *inputs):
    CASES[name] = (module, inputs)


# ------------------------------------------------------------------ pooling
# torch-mlir pads a ceil-mode input so far that torch's pooling of it has
# more windows than linalg's output; padding, count_include_pad and the
# divisor come as a pad and an index-dependent division.

AVG_POOLS = [  # (kernel, stride, padding, ceil_mode, count_include_pad)
    (3, 1, 0, True, True), (3, 2, 1, True, True), (3, 2, 1, True, False),
    (3, 2, 1, False, False), (2, 2, 1, True, False)]
for k, s, p, ceil, include in AVG_POOLS:
    tag = f"k{k}s{s}p{p}{'_ceil' if ceil else ''}{'_include' if include else ''}"
    case(f"avg_pool2d_{tag}",
         nn.AvgPool2d(k, stride=s, padding=p, ceil_mode=ceil, count_include_pad=include),
         floats(2, 3, 4, 4) if s == 1 else floats(2, 3, 7, 6))
for include in (True, False):
    case(f"avg_pool1d_k3s2p1_ceil{'_include' if include else ''}",
         nn.AvgPool1d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=include),
         floats(2, 3, 8))
case("avg_pool2d_divisor_ceil",
     nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, divisor_override=5),
     floats(1, 2, 6, 6))
case("max_pool2d_k3s2p1_ceil", nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True),
     floats(2, 3, 6, 7))
case("max_pool1d_k3s1p0_ceil", nn.MaxPool1d(3, stride=1, ceil_mode=True), floats(2, 3, 8))

# ------------------------------------------------------------- 0-d reshapes

case("clamp_tensor_bounds", Lambda(lambda x, lo, hi: torch.clamp(x, lo, hi)),
     floats(4, 5), floats(), lambda g: torch.rand((), generator=g) + 0.5)
case("reshape_from_0d", Lambda(lambda x: x.reshape(1, 1) * 2.0), floats())
case("reshape_to_0d", Lambda(lambda x: x.reshape(()) + 1.0), floats(1, 1))
case("flatten_broadcast", Lambda(lambda x, y: (x + y).flatten()), floats(1), floats())

# ------------------------------------------- outputs the function does not compute
# A function may return an input, a view of one or a constant as it is:
# each is still a value of the plan (a constant gets a step of its own).

case("returns_input_and_view", Lambda(lambda x, y: (torch.relu(x) + y, x, x[:, :2])),
     floats(4, 5), floats(4, 5))
case("returns_constants",
     Lambda(lambda x: (x * 2.0, torch.ones(3), torch.full((2, 2), 7, dtype=torch.int64))),
     floats(3))
case("returns_folded_reduction", Lambda(lambda x: (x + 1.0, torch.zeros(4, 2).sum(dim=0))),
     floats(3))

# ------------------------------------------------------------------ integers

I64, I32, I16, I8, U8 = torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8


def low(dtype):
    return 0 if dtype == U8 else -50


def high(dtype):
    """uint8 over its whole range: values of 128 and up are negative as int8."""
    return 256 if dtype == U8 else 50


def dtype_name(dtype):
    return str(dtype).split(".")[1]


BINARY = {
    "floordiv": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    "truncdiv": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "truediv": lambda a, b: a / b,
    "remainder": torch.remainder,
    "fmod": torch.fmod,
    "minmax": lambda a, b: torch.minimum(a, b) + torch.maximum(a, b),
}
for op, dtypes in {"floordiv": (I64, I32, I8, U8), "truncdiv": (I16, U8), "truediv": (I32,),
                   "remainder": (I64, U8), "fmod": (I32,), "minmax": (U8,)}.items():
    for dt in dtypes:
        case(f"{op}_{dtype_name(dt)}", Lambda(BINARY[op]),
             ints(4, 6, dtype=dt, low=low(dt), high=high(dt)),
             ints(4, 6, dtype=dt, low=low(dt), high=high(dt), nonzero=True))
REDUCE = {"amin": lambda a: torch.amin(a, dim=1), "amax": lambda a: torch.amax(a, dim=0),
          "sum": lambda a: a.sum(dim=1)}
for op, dtypes in {"amin": (I64, U8), "amax": (I8,), "sum": (U8,)}.items():
    for dt in dtypes:
        case(f"{op}_{dtype_name(dt)}", Lambda(REDUCE[op]),
             ints(4, 6, dtype=dt, low=low(dt), high=high(dt)))
case("sum_int8_to_int32", Lambda(lambda a: a.sum(dim=1, dtype=torch.int32)),
     ints(4, 60, dtype=I8, low=-128, high=127))
case("compare_where_int64", Lambda(lambda a, b: torch.where(a > b, a, b - 1)),
     ints(4, 6), ints(4, 6))
case("scalar_floordiv_int64", Lambda(lambda a: a // 3), ints(4, 6))
# Beyond 2^53 float64 holds no quotient exactly: torch-mlir's float64
# floor of the quotient, raised back to integer division, stays exact.
case("scalar_floordiv_large_int64", Lambda(lambda a: a // 3 + torch.floor_divide(a, -7)),
     ints(4, 6, low=-2 ** 62, high=2 ** 62))
case("to_float_uint8", Lambda(lambda a: a.float() * 0.5), ints(4, 6, dtype=U8, low=0, high=255))
case("cast_float_to_uint8", Lambda(lambda x: (x * 40).clamp(0, 255).to(U8)), floats(4, 6))
case("cast_int_to_uint8", Lambda(lambda a: a.to(U8)), ints(4, 6, low=0, high=255))
case("cast_uint8_to_int", Lambda(lambda a: a.to(I64) - 100),
     ints(4, 6, dtype=U8, low=0, high=255))
case("cast_float_to_int", Lambda(lambda x: (x * 10).to(I32)), floats(4, 6))
case("uint8_compare", Lambda(lambda a, b: (a < b).to(I64)),
     ints(4, 6, dtype=U8, low=0, high=255), ints(4, 6, dtype=U8, low=0, high=255))
case("int_plus_float", Lambda(lambda a, x: a + x), ints(4, 6, dtype=I32), floats(4, 6))
# 8-bit arithmetic with Python numbers wraps as eager's C++ does (torch-mlir
# faulted on it); uint8 widened to int64 or int32 by a reduction stays
# non-negative.
EIGHT_BIT_WITH_NUMBERS = {
    "times": lambda a: a * 3, "minus": lambda a: a - 7, "floordiv": lambda a: a // 3,
    "remainder": lambda a: a % 7, "xor_or": lambda a: (a ^ 0x55) | 3}
for op, fn in EIGHT_BIT_WITH_NUMBERS.items():
    for dt in (I8, U8):
        case(f"{dtype_name(dt)}_{op}_number", Lambda(fn),
             ints(4, 6, dtype=dt, low=low(dt), high=high(dt)))
case("uint8_sum_prod_widened",
     Lambda(lambda a: (a.sum(dim=1), a.prod(dim=0), a.sum(dim=1, dtype=torch.int32))),
     ints(4, 6, dtype=U8, low=0, high=256))
case("cast_int_to_uint8_wrapping", Lambda(lambda a: (a.to(U8).float() * 0.5, a.to(U8).sum(1))),
     ints(4, 6, low=-300, high=600))
case("threshold_backward", Lambda(lambda g, x: torch.ops.aten.threshold_backward(g, x, 0)),
     floats(4, 6), ints(4, 6))
case("int_bitwise", Lambda(lambda a, b: (a & b) | (a ^ b)),
     ints(4, 6, dtype=I32), ints(4, 6, dtype=I32))
# Shifts: arithmetic right shifts of negative values, shifts by a tensor.
case("shift_by_number_int64", Lambda(lambda a: (a << 3) + (a >> 2)), ints(4, 6))
case("shift_by_tensor_int32", Lambda(lambda a, s: (a << s) ^ (a >> s)),
     ints(4, 6, dtype=I32), ints(4, 6, dtype=I32, low=0, high=8))
case("shift_uint8", Lambda(lambda a: (a >> 3) + (a << 1)),
     ints(4, 6, dtype=U8, low=0, high=256))

# ------------------------------------------------------- mixed float dtypes
# Eager computes an elementwise op of tensors of two dtypes in their common
# dtype; torch's meta functions of some backward ops give the first
# operand's, and torch-mlir fails on clamp with bounds of another dtype.


def doubles(*shape):
    return lambda g: torch.randn(shape, generator=g, dtype=torch.float64)


def halves(*shape):
    return lambda g: torch.randn(shape, generator=g).half()


case("threshold_backward_float_double",
     Lambda(lambda g, x: torch.ops.aten.threshold_backward(g, x, 0.5)), floats(4, 6), doubles(4, 6))
case("threshold_backward_half_float",
     Lambda(lambda g, x: torch.ops.aten.threshold_backward(g, x, 0.0)), halves(4, 6), floats(4, 6))
case("hardtanh_backward_float_double",
     Lambda(lambda g, x: torch.ops.aten.hardtanh_backward(g, x, -0.5, 0.5)),
     floats(4, 6), doubles(4, 6))
case("clamp_bounds_of_another_dtype", Lambda(lambda x, lo: torch.clamp(x, min=lo, max=lo + 1)),
     halves(4, 6), floats(4, 6))

# ------------------------------------------------------ index-dependent ones

case("triu", Lambda(lambda x: torch.triu(x, 1)), floats(5, 6))
case("tril", Lambda(lambda x: torch.tril(x)), floats(6, 5))
case("causal_mask", Lambda(lambda s: s.masked_fill(
    torch.ones(6, 6, dtype=torch.bool).triu(1), float("-inf")).softmax(-1)), floats(2, 6, 6))
case("arange_add", Lambda(lambda x: x + torch.arange(6, dtype=torch.float32)), floats(4, 6))
case("arange_int", Lambda(lambda x: x * torch.arange(6)), ints(4, 6))
case("one_hot", Lambda(lambda a: F.one_hot(a, 5)), ints(7, low=0, high=5))

# ------------------------------------------------------ boolean reductions
# all/any lower to generics that reduce with arith.andi / arith.ori on i1.

def bools(*shape, p=0.7):
    return lambda g: torch.rand(shape, generator=g) < p


case("all_dim", Lambda(lambda x: (x > -1.5).all(dim=1)), floats(4, 6))
case("any_dim0", Lambda(lambda x: (x > 1.5).any(dim=0)), floats(5, 3))
case("all_bool_input", Lambda(lambda m: m.all(dim=-1)), bools(6, 5, p=0.9))
case("any_keepdim_to_float", Lambda(lambda m, x: m.any(dim=1, keepdim=True) * x),
     bools(4, 3, p=0.2), floats(4, 3))

# ---------------------------------------------------------- index reductions
# argmax/argmin (and max/min with indices) lower to one generic whose second
# output selects the loop index where the running max/min changes.

def ties(*shape):
    return lambda g: torch.randint(0, 3, shape, generator=g).float()


case("argmax_dim1", Lambda(lambda x: torch.argmax(x, dim=1)), floats(4, 7))
case("argmin_dim0_keepdim", Lambda(lambda x: torch.argmin(x, dim=0, keepdim=True)),
     floats(5, 3))
case("argmax_ties_first", Lambda(lambda x: torch.argmax(x, dim=-1)), ties(6, 9))
case("argmin_int", Lambda(lambda a: torch.argmin(a, dim=1)), ints(4, 6))
case("max_values_indices", Lambda(lambda x: torch.max(x, dim=1)), floats(3, 5, 4))
case("min_values_indices", Lambda(lambda x: torch.min(x, dim=-1)), floats(3, 6))

# --------------------------------------------------------- masked reductions
# An embedding bag sums the rows of each bag: a reduction that combines only
# where its index falls inside the bag (`select %in_bag, acc + x, acc`).

case("embedding_bag_sum", nn.EmbeddingBag(12, 5, mode="sum"), ints(3, 4, low=0, high=12))
case("embedding_bag_sum_long_bags", nn.EmbeddingBag(9, 3, mode="sum"), ints(2, 7, low=0, high=9))

# ----------------------------------------------- grouped convs, 3-D pooling
# torch-mlir gives a grouped convolution the groups as a dim of their own
# (linalg.conv_2d_ngchw_gfchw) and 3-D average pooling a channels-last
# layout (linalg.pooling_ndhwc_sum between two transposes).

case("conv2d_groups", nn.Conv2d(4, 6, 3, groups=2, stride=2, bias=False), floats(2, 4, 7, 7))
case("conv2d_depthwise_multiplier", nn.Conv2d(3, 6, 3, groups=3, dilation=2),
     floats(1, 3, 9, 8))
# Grouped 1-D and 3-D convolutions, transposed ones too, come as generics
# with the groups as a dim of their own (linalg names only the 2-D one).
case("conv3d_groups", nn.Conv3d(4, 6, 3, groups=2, stride=(1, 2, 1)), floats(1, 4, 5, 6, 5))
case("conv1d_groups_dilated", nn.Conv1d(6, 9, 3, groups=3, dilation=2), floats(2, 6, 11))
case("conv_transpose3d_strided_padded_groups",
     nn.ConvTranspose3d(4, 6, 3, stride=2, padding=1, groups=2), floats(1, 4, 3, 4, 3))
case("avg_pool3d", nn.AvgPool3d(2), floats(2, 3, 4, 6, 4))
# 3-D max pooling comes as a generic whose input map reads windows
# (`d * stride + k * dilation`): the pooling it is.
case("max_pool3d", nn.MaxPool3d(2), floats(2, 2, 4, 6, 6))
case("max_pool3d_padded_dilated", nn.MaxPool3d(3, stride=2, padding=1, dilation=2),
     floats(1, 2, 7, 8, 7))
case("avg_pool3d_padded", nn.AvgPool3d(3, stride=2, padding=1), floats(1, 2, 5, 5, 6))

# ------------------------------------------------------------ normalization


class ConvGroupNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.norm = nn.GroupNorm(4, 8)

    def forward(self, x):
        return self.norm(self.conv(x))


case("group_norm", nn.GroupNorm(2, 6), floats(2, 6, 4, 4))
case("conv_group_norm", ConvGroupNorm(), floats(2, 3, 6, 6))
case("instance_norm", nn.InstanceNorm2d(4), floats(2, 4, 5, 5))

# --------------------------------------------- half-precision normalizations
# Statistics of half inputs are taken in float (torch-mlir's instance norm
# takes them in float64), so the result is closer to the function than
# eager's half kernels may be: a half result is checked against the module
# run in float64 (`assert_close_to_double`).

def offset(draw, dtype, mean=3.0, scale=4.0):
    """Draws of `draw` scaled and moved off zero (the statistics then
    cancel), in `dtype`."""
    return lambda g: (draw(g) * scale + mean).to(dtype)


for dtype in (torch.float16, torch.bfloat16):
    tag = dtype_name(dtype)
    case(f"instance_norm_{tag}", nn.InstanceNorm2d(4, affine=True).to(dtype),
         offset(floats(2, 4, 5, 5), dtype))
    case(f"instance_norm1d_{tag}", nn.InstanceNorm1d(3).to(dtype), offset(floats(2, 3, 50), dtype))
    case(f"group_norm_{tag}", nn.GroupNorm(2, 6).to(dtype), offset(floats(2, 6, 4, 4), dtype))
    case(f"layer_norm_{tag}", nn.LayerNorm(16).to(dtype), offset(floats(3, 5, 16), dtype))
    case(f"log_softmax_{tag}", nn.LogSoftmax(-1).to(dtype), offset(floats(4, 33), dtype))

# ------------------------------------------------------------ recurrent state
# The final hidden and cell states, carried across the unrolled steps, of a
# batch of more than one (torch's decomposition gave them a dim too many).


class RecurrentStates(nn.Module):
    def __init__(self, rnn, pick):
        super().__init__()
        self.rnn, self.pick = rnn, pick

    def forward(self, x):
        return self.pick(*self.rnn(x))


case("lstm_final_states", RecurrentStates(nn.LSTM(5, 6, num_layers=2, batch_first=True),
                                          lambda out, states: states), floats(3, 4, 5))
case("lstm_last_state_and_step",
     RecurrentStates(nn.LSTM(5, 6, bidirectional=True),
                     lambda out, states: (states[0][-1], out[-1] * states[1][0].repeat(1, 2))),
     floats(4, 2, 5))
case("gru_final_state", RecurrentStates(nn.GRU(5, 6, batch_first=True),
                                        lambda out, state: state), floats(2, 3, 5))

# ------------------------------------------------------- math functions
# The inverse trigonometric, hyperbolic and base-2 / base-10 log functions
# torch-mlir lowers to one math op each, inside their domains.
case("inverse_and_hyperbolic", Lambda(lambda x: torch.atan(x) + torch.asin(torch.tanh(x))
                                      + torch.acos(torch.tanh(x) * 0.5) + torch.sinh(x * 0.5)
                                      + torch.cosh(x * 0.5) + torch.asinh(x)
                                      + torch.acosh(x.abs() + 1)
                                      + torch.atanh(torch.tanh(x) * 0.9)),
     floats(4, 9))
case("log2_log10", Lambda(lambda x: torch.log2(x.abs() + 1) - torch.log10(x * x + 2)),
     floats(5, 6))

# ---------------------------------------------------------- cumulative ops
# torch-mlir's tm_tensor.scan (of a dialect dice-opt does not register, read
# by name) goes into requests and renders as torch.cumsum / torch.cumprod;
# integer scans keep their dtype.
case("cumsum_between_requests", Lambda(lambda x: torch.relu(torch.cumsum(x * 2, dim=1)) + 1),
     floats(3, 7))
case("cumsum_first_dim", Lambda(lambda x: torch.cumsum(x, dim=0)), floats(5, 4))
case("cumprod_rows", Lambda(lambda x: torch.cumprod(x, dim=-1)), floats(4, 6))
case("cumsum_int32", Lambda(lambda x: torch.cumsum(x, dim=1, dtype=torch.int32)),
     ints(3, 9, dtype=torch.int32))
case("cumsum_reversed", Lambda(lambda x: torch.cumsum(x.flip(1), dim=1).flip(1)), floats(3, 7))
case("cumsum_exclusive", Lambda(lambda x: torch.cumsum(x, dim=-1) - x), floats(4, 5))
case("cumsum_masked", Lambda(lambda x: torch.cumsum(x * (x > 0), dim=1)), floats(3, 8))

# ------------------------------------------------------------------ sorting
# tm_tensor.sort (sort, topk, argsort) goes into requests and renders as a
# stable torch.argsort and a gather of each operand by its order.
case("sort_values_and_indices", Lambda(lambda x: torch.sort(x, dim=1)), floats(4, 7))
case("sort_descending_first_dim", Lambda(lambda x: torch.sort(x, dim=0, descending=True)[0] * 2),
     floats(5, 3))
case("topk_largest", Lambda(lambda x: torch.topk(x, 3, dim=-1)), floats(3, 4, 6))
case("topk_smallest_then_relu", Lambda(lambda x: torch.topk(x, 2, dim=1, largest=False)[0].relu()),
     floats(4, 5))
case("sort_ints_with_ties",
     Lambda(lambda a: torch.sort(a, dim=1)), ints(3, 9, low=0, high=4))
case("median_by_sort", Lambda(lambda x: x.sort(dim=-1)[0][..., 3] - x.mean(-1)), floats(4, 7))

# ------------------------------------------------------------------ scatter
# tm_tensor.scatter (scatter, index_put, index_add) goes into requests and
# renders as Tensor.index_put, overwriting or accumulating (or as
# index_reduce, combining by product, max or min); indices are
# distinct where overwriting, since PyTorch leaves the winner of a
# duplicate unspecified.
PERMUTATION = torch.tensor([[2, 0, 1, 3], [1, 3, 0, 2], [0, 1, 3, 2]])
case("scatter_dim1", Lambda(lambda x, u: x.scatter(1, PERMUTATION, u)),
     floats(3, 4), floats(3, 4))
case("scatter_add_dim1", Lambda(lambda x, u: x.scatter_add(1, PERMUTATION[:, :2], u)),
     floats(3, 4), floats(3, 2))
case("index_put_rows", Lambda(lambda x, u: torch.index_put(x, (torch.tensor([4, 0, 2]),), u)),
     floats(6, 5), floats(3, 5))
case("index_put_accumulate_repeated",
     Lambda(lambda x, u: torch.index_put(x, (torch.tensor([1, 3, 1, 1]),), u, accumulate=True)),
     floats(5, 4), floats(4, 4))
case("index_add_dim0", Lambda(lambda x, u: x.index_add(0, torch.tensor([2, 2, 0]), u)),
     floats(4, 3), floats(3, 3))
# Combining updates: scatter_reduce and index_reduce by product, max, min
# and mean (a sum and a count of updates), with and without the original.
REPEATED = torch.tensor([[0, 1, 0], [2, 2, 1], [3, 3, 3]])
for reduce in ("amax", "amin", "prod", "mean"):
    for include_self in (True, False):
        case(f"scatter_reduce_{reduce}{'' if include_self else '_without_self'}",
             Lambda(lambda x, u, reduce=reduce, include_self=include_self: x.scatter_reduce(
                 1, REPEATED, u, reduce=reduce, include_self=include_self)),
             floats(3, 4), floats(3, 3))
case("scatter_reduce_amax_int64",
     Lambda(lambda x, u: x.scatter_reduce(0, REPEATED[:2], u, reduce="amax")), ints(3, 3), ints(2, 3))
case("index_reduce_prod_rows",
     Lambda(lambda x, u: x.index_reduce(1, torch.tensor([2, 0, 2]), u, reduce="prod")),
     floats(2, 4, 3), floats(2, 3, 3))
case("index_reduce_amin_without_self",
     Lambda(lambda x, u: x.index_reduce(0, torch.tensor([1, 1, 3, 1]), u, reduce="amin",
                                        include_self=False)), floats(5, 2), floats(4, 2))
case("index_put_int64", Lambda(lambda x, u: torch.index_put(x, (torch.tensor([4, 0, 2]),), u)),
     ints(6, 2), ints(3, 2))


# ---------------------------------------------------------- writes into views
# A value written into a view of a tensor (a column, a strided slice, a
# transposed block) changes the tensor there and only there.


class WriteIntoView(nn.Module):
    def __init__(self, write):
        super().__init__()
        self.write = write

    def forward(self, x):
        y = x.clone()
        self.write(y)
        return y * 2


def arange_into_column(y):
    y[:, 1] = torch.arange(y.shape[0], dtype=y.dtype)


def arange_into_strided_slice(y):
    y[1:3, ::2] = torch.arange(8, dtype=y.dtype).view(2, 4) - 3


def arange_into_transposed_block(y):
    y.t()[2:4] = torch.arange(10, dtype=y.dtype).view(2, 5)


def fill_into_narrowed(y):
    y.narrow(1, 3, 4).fill_(-1)


def add_into_diagonal(y):
    y.diagonal().add_(torch.arange(5, dtype=y.dtype))


def arange_into_offset_diagonal(y):
    torch.diagonal(y, -2).copy_(torch.arange(3, dtype=y.dtype))


def fill_diagonal(y):
    y.fill_diagonal_(7)


for write in (arange_into_column, arange_into_strided_slice, arange_into_transposed_block,
              fill_into_narrowed, add_into_diagonal, arange_into_offset_diagonal,
              fill_diagonal):
    case(write.__name__, WriteIntoView(write), floats(5, 8))
case("arange_into_column_int64", WriteIntoView(arange_into_column), ints(5, 8))
case("scale_into_batched_diagonals",
     Lambda(lambda x: torch.diagonal_scatter(x, torch.diagonal(x, 1, 1, 2) * 3, 1, 1, 2)),
     floats(2, 4, 5))

# ------------------------------------------------------------------ harness


def build(name):
    module, draws = CASES[name]
    torch.manual_seed(0)
    if hasattr(module, "reset_parameters"):
        module.reset_parameters()
    for m in module.modules():
        if hasattr(m, "reset_parameters"):
            m.reset_parameters()
    module.eval()
    return module, draws


def draw_inputs(draws, seed):
    g = torch.Generator().manual_seed(seed)
    return [draw(g) for draw in draws]


@pytest.fixture(scope="module", params=sorted(CASES))
def exported(request, tmp_path_factory):
    name = request.param
    module, draws = build(name)
    mlir = export_linalg_on_tensors(module, draw_inputs(draws, 1), func_name=name)
    path = tmp_path_factory.mktemp(name) / f"{name}.mlir"
    path.write_text(mlir)
    return name, module, draws, path


def signless(tensor):
    """uint8 as the function sees it: torch-mlir's linalg-on-tensors has
    signless integers only, so a uint8 argument or result is an i8 tensor
    of the same bytes; the unsigned ops inside say how to read them."""
    return tensor.view(torch.int8) if tensor.dtype == torch.uint8 else tensor


HALF_DTYPES = (torch.float16, torch.bfloat16)


def in_double(module, inputs):
    """`module` run in float64: a copy of it, its floating inputs cast."""
    double = copy.deepcopy(module).double()
    with torch.no_grad():
        outputs = double(*[x.double() if x.is_floating_point() else x for x in inputs])
    return list(outputs) if isinstance(outputs, tuple) else [outputs]


def relative_error(got, want):
    scale = want.abs().max().item() or 1.0
    return (got.double() - want.double()).abs().max().item() / scale


def assert_close_to_double(got, want, exact, where):
    """A half result `got` is as close to the float64 result `exact` as
    eager's `want` is, or within rounding to its dtype (half an epsilon of
    the largest magnitude)."""
    assert got.dtype == want.dtype, f"{where}: dtype {got.dtype}, torch gives {want.dtype}"
    assert got.shape == want.shape, f"{where}: shape {tuple(got.shape)}, torch gives {tuple(want.shape)}"
    bound = max(relative_error(want, exact), torch.finfo(want.dtype).eps / 2)
    err = relative_error(got, exact)
    assert err <= bound, f"{where}: relative error {err:.3g} against float64, eager {bound:.3g}"


def assert_equal(got, want, where):
    assert got.dtype == want.dtype, f"{where}: dtype {got.dtype}, torch gives {want.dtype}"
    assert got.shape == want.shape, f"{where}: shape {tuple(got.shape)}, torch gives {tuple(want.shape)}"
    if not want.dtype.is_floating_point:
        assert torch.equal(got, want), f"{where}: values differ\n{got}\n{want}"
        return
    assert torch.equal(got.isnan(), want.isnan()), f"{where}: NaNs differ"
    finite = want.isfinite()
    assert torch.equal(got[~finite & ~want.isnan()], want[~finite & ~want.isnan()]), \
        f"{where}: infinities differ"
    g, w = got[finite].double(), want[finite].double()
    scale = w.abs().max().item() if w.numel() else 1.0
    err = (g - w).abs().max().item() / (scale or 1.0) if w.numel() else 0.0
    assert err <= MAX_RELATIVE_ERROR, f"{where}: max relative error {err:.3g}"


@pytest.mark.parametrize("granularity", GRANULARITIES)
def test_reference_program_computes_the_function(exported, granularity, tmp_path):
    name, module, draws, source = exported
    outlined = tool("dice-opt", source, f"--dice-outline=granularity={granularity}",
                    "--dice-scaffold")
    plan_text = tool("dice-plan", stdin=outlined)
    plan = json.loads(plan_text)
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(plan_text)
    inputs = draw_inputs(draws, 7)
    with torch.no_grad():
        expected = module(*inputs)
    expected = list(expected) if isinstance(expected, tuple) else [expected]
    expected = [signless(e) for e in expected]
    exact = (in_double(module, inputs) if any(e.dtype in HALF_DTYPES for e in expected)
             else [None] * len(expected))
    inputs = [signless(x) for x in inputs]
    for backend, outputs in (("python", run_plan(plan, inputs)),
                             ("aten", run_aten(plan_path, inputs, tmp_path))):
        assert len(outputs) == len(expected)
        for got, want, double in zip(outputs, expected, exact):
            where = f"{name} ({granularity}, {backend})"
            if want.dtype in HALF_DTYPES:
                assert_close_to_double(got, want, double, where)
            else:
                assert_equal(got, want, where)

