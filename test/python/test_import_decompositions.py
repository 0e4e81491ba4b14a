"""The import's own decompositions and graph rewrite (dice.decompositions):
they compute what eager PyTorch does (the decomposed program run as an FX
module), the coverage programs that torch-mlir could not lower before now
export as linalg, and an as_strided that is not a view is left alone."""

import random
import re
import sys
import warnings

import pytest
import torch
import torch.nn as nn

from build_tree import SOURCE_ROOT
from dice import decompositions
from dice.torch_mlir_import import export_linalg_on_tensors, exported_program

sys.path.insert(0, str(SOURCE_ROOT / "test" / "coverage"))

import measure  # noqa: E402
import programs  # noqa: E402

aten = torch.ops.aten

# torch.export's pytree deprecation notices say nothing about the graphs.
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")

# A torch-dialect op left in the text: one torch-mlir could not lower.
TORCH_OP = re.compile(r'^\s*(%[^=]*=\s*)?"?torch\.(aten|prims|operator)\b', re.MULTILINE)


Fn = programs.Fn  # a module computing fn(*inputs)


def targets(program):
    return {n.target for n in program.graph.nodes if n.op == "call_function"}


def assert_decomposed_matches_eager(module, inputs, gone, **options):
    """The decomposed program of `module` holds none of `gone` and computes
    what `module` does, on `inputs`."""
    program = exported_program(module, inputs, **options)
    assert not targets(program) & set(gone), program.graph
    actual, expected = program.module()(*inputs), module(*inputs)
    for a, e in zip(torch.utils._pytree.tree_leaves(actual),
                    torch.utils._pytree.tree_leaves(expected)):
        assert a.dtype == e.dtype and a.shape == e.shape
        torch.testing.assert_close(a, e)
    return program


# fmod, remainder and bitwise or / xor with a Python number on one side.

NUMBERS = [
    ("fmod_float", lambda x, i: torch.fmod(x * 5, 1.5) + torch.fmod(x, -0.7)),
    ("fmod_int", lambda x, i: torch.fmod(i, 3) * 10 + torch.fmod(i, -4)),
    ("fmod_int_by_float", lambda x, i: torch.fmod(i, 2.5)),
    ("remainder_number_first", lambda x, i: torch.remainder(-2.5, x) + torch.remainder(3.0, x)),
    ("remainder_int_first", lambda x, i: torch.remainder(7, i) + torch.remainder(-7, i)),
    ("remainder_float", lambda x, i: torch.remainder(x * 5, -1.5)),
    ("bitwise_with_numbers", lambda x, i: ((i ^ 0x55) | 3) + ((x > 0) ^ True) + ((i < 0) | False)),
]


def number_inputs():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 10, generator=g) * 3
    sign = torch.randint(0, 2, (4, 10), generator=g) * 2 - 1
    return x, torch.randint(1, 9, (4, 10), generator=g) * sign  # nonzero, either sign


@pytest.mark.parametrize("name,fn", NUMBERS, ids=[n for n, _ in NUMBERS])
def test_ops_with_numbers_decompose(name, fn):
    inputs = number_inputs()
    assert_decomposed_matches_eager(Fn(fn), inputs,
                                    [aten.fmod.Scalar, aten.remainder.Scalar_Tensor,
                                     aten.bitwise_or.Scalar, aten.bitwise_xor.Scalar])
    text = export_linalg_on_tensors(Fn(fn), inputs, func_name=name)
    assert not TORCH_OP.search(text)


# _embedding_bag against eager aten._embedding_bag, all four results.

def bag_case(dtype=torch.float):
    g = torch.Generator().manual_seed(0)
    weight = torch.randn(10, 4, generator=g).to(dtype)
    indices = torch.tensor([1, 7, 2, 0, 7, 3, 4, 7, 9])
    # Bag 1 is empty; without include_last_offset, the last one too. Bag 2
    # holds a row twice.
    offsets = torch.tensor([0, 2, 2, 5, 9])
    psw = torch.randn(indices.numel(), generator=g).to(dtype)
    return weight, indices, offsets, psw


@pytest.mark.parametrize("op,forward_only", [(aten._embedding_bag, False),
                                              (aten._embedding_bag_forward_only, True)])
@pytest.mark.parametrize("dtype", [torch.float, torch.double])
@pytest.mark.parametrize("mode,weighted", [(0, False), (0, True), (1, False), (2, False)],
                         ids=["sum", "weighted_sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [-1, 7])
@pytest.mark.parametrize("include_last_offset", [False, True])
def test_embedding_bag_decomposition_matches_eager(op, forward_only, dtype, mode, weighted,
                                                   padding_idx, include_last_offset):
    weight, indices, offsets, psw = bag_case(dtype)
    args = (weight, indices, offsets, False, mode, False, psw if weighted else None,
            include_last_offset, padding_idx)
    expected = op(*args)
    actual = decompositions.embedding_bag(*args, forward_only=forward_only)
    for name, a, e in zip(("output", "offset2bag", "bag_size", "max_indices"), actual, expected):
        assert a.dtype == e.dtype and a.shape == e.shape, name
        torch.testing.assert_close(a, e, msg=name)


@pytest.mark.parametrize("shape", [(5, 8), (8, 5), (3, 4, 6), (2, 5, 5, 3)])
def test_diagonal_scatter_decomposition_matches_eager(shape):
    """Every pair of dims, either order, every offset up to past the edges
    (an empty diagonal included)."""
    g = torch.Generator().manual_seed(len(shape))
    x = torch.randn(shape, generator=g)
    for dim1 in range(-len(shape), len(shape)):
        for dim2 in range(len(shape)):
            if dim1 % len(shape) == dim2:
                continue
            for offset in range(-max(shape) - 1, max(shape) + 2):
                source = torch.randn(torch.diagonal(x, offset, dim1, dim2).shape, generator=g)
                expected = torch.diagonal_scatter(x, source, offset, dim1, dim2)
                actual = decompositions.diagonal_scatter(x, source, offset, dim1, dim2)
                assert torch.equal(actual, expected), (shape, dim1, dim2, offset)


@pytest.mark.parametrize("seed", range(4))
def test_as_strided_scatter_decomposition_matches_eager(seed):
    """Strided views of contiguous and permuted tensors' storage, at any
    storage offset; a view's dims never overlap one another."""
    rng = random.Random(seed)
    g = torch.Generator().manual_seed(seed)
    checked = 0
    while checked < 50:
        shape = [rng.randint(1, 5) for _ in range(rng.randint(1, 4))]
        order = list(range(len(shape)))
        rng.shuffle(order)
        x = torch.randn([shape[d] for d in order], generator=g).permute(
            [order.index(d) for d in range(len(shape))])
        size = [rng.randint(1, 3) for _ in range(rng.randint(1, 2))]
        stride, extent = [0] * len(size), 1
        for d in reversed(range(len(size))):  # each dim past the ones inside it
            stride[d] = extent + rng.randint(0, 2)
            extent = stride[d] * (size[d] - 1) + extent
        if extent > x.numel():
            continue
        offset = rng.randint(0, x.numel() - extent)
        source = torch.randn(size, generator=g)
        expected = torch.as_strided_scatter(x, source, size, stride, offset)
        actual = decompositions.as_strided_scatter(x, source, size, stride, offset)
        assert torch.equal(actual, expected), (x.shape, x.stride(), size, stride, offset)
        checked += 1


class Bags(nn.Module):
    def __init__(self, mode, padding_idx=None, include_last_offset=False):
        super().__init__()
        self.bag = nn.EmbeddingBag(10, 4, mode=mode, padding_idx=padding_idx,
                                   include_last_offset=include_last_offset)

    def forward(self, indices, offsets=None, per_sample_weights=None):
        return self.bag(indices, offsets, per_sample_weights)


BAG_MODULES = {
    "sum": (Bags("sum"), False),
    "sum_padding": (Bags("sum", padding_idx=7), False),
    "sum_weighted": (Bags("sum", padding_idx=7), True),
    "mean": (Bags("mean"), False),
    "mean_padding_last_offset": (Bags("mean", padding_idx=7, include_last_offset=True), False),
    "max_padding": (Bags("max", padding_idx=7), False),
    "max_last_offset": (Bags("max", include_last_offset=True), False),
}


@pytest.mark.parametrize("name", BAG_MODULES)
@pytest.mark.parametrize("grad", [True, False])
def test_embedding_bag_modules_decompose(name, grad):
    module, weighted = BAG_MODULES[name]
    _, indices, offsets, psw = bag_case()
    inputs = (indices, offsets, psw) if weighted else (indices, offsets)
    with torch.set_grad_enabled(grad):  # without, export gives _embedding_bag_forward_only
        assert_decomposed_matches_eager(
            module, inputs, [aten._embedding_bag.default, aten._embedding_bag_forward_only.default,
                             aten.embedding_bag.padding_idx])
        text = export_linalg_on_tensors(module, inputs, func_name=name)
    assert not TORCH_OP.search(text)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_of_a_2d_input_with_a_dynamic_batch(mode):
    module = Bags(mode, padding_idx=3)
    indices = torch.tensor([[1, 3, 2], [3, 3, 3], [0, 9, 9]])
    dynamic = ({0: torch.export.Dim("batch", min=1, max=64)},)
    program = assert_decomposed_matches_eager(module, (indices,), [aten._embedding_bag.default],
                                              dynamic_shapes=dynamic)
    other = torch.tensor([[5, 3, 8]] * 5)
    torch.testing.assert_close(program.module()(other), module(other))
    text = export_linalg_on_tensors(module, (indices,), dynamic_shapes=dynamic)
    assert not TORCH_OP.search(text) and "tensor<?x3xi64>" in text


# The coverage programs that failed in torch-mlir's lowering.

PROGRAMS = programs.load()
EXPORTS = [(name, mode) for name in ("fmod_remainder", "embedding_bag_mean", "groupnorm")
           for mode in ("static", "dynamic") if mode == "static" or PROGRAMS[name].dynamic]


@pytest.mark.parametrize("name,mode", EXPORTS)
def test_coverage_programs_export(name, mode):
    program = PROGRAMS[name]
    module, example = program.build()
    options = {}
    if mode == "dynamic":
        options["dynamic_shapes"] = measure.dynamic_shapes(module, example, program.dynamic)
    decomposed = exported_program(module, example, **options)
    assert not {str(t) for t in targets(decomposed)} & {
        "aten.as_strided.default", "aten._embedding_bag.default", "aten.fmod.Scalar"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = export_linalg_on_tensors(module, example, func_name=name, **options)
    assert "func.func @" + name in text and not TORCH_OP.search(text)
    if mode == "dynamic":
        assert "tensor<?x" in text
        batch = measure.fresh_inputs(example, False, seed=1, batch={0: 5})
        torch.testing.assert_close(decomposed.module()(*batch), module(*batch))


def test_an_exported_program_is_decomposed_too():
    module = Bags("mean", padding_idx=7)
    _, indices, offsets, _ = bag_case()
    program = torch.export.export(module, (indices, offsets))
    text = export_linalg_on_tensors(program, (indices, offsets), func_name="bags")
    assert "func.func @bags" in text and not TORCH_OP.search(text)


# as_strided: a view where it provably is one, else left alone.

AS_STRIDED = {
    # name: (input shape, size, stride, storage offset, is a view)
    "reshape": ((3, 4), (4, 3), (3, 1), None, True),
    "reshape_offset_0": ((3, 4), (2, 6), (6, 1), 0, True),
    "unit_dimension_any_stride": ((3, 4), (12, 1), (1, 99), 0, True),
    "transposed": ((3, 4), (4, 3), (1, 4), 0, False),
    "overlapping": ((3, 4), (3, 3), (2, 1), 0, False),
    "broadcast": ((3, 4), (3, 4), (0, 1), 0, False),
    "nonzero_offset": ((3, 4), (2, 4), (4, 1), 4, False),
    "prefix": ((3, 4), (2, 4), (4, 1), 0, False),
}


@pytest.mark.parametrize("name", AS_STRIDED)
def test_as_strided_becomes_a_view_only_where_it_is_one(name):
    shape, size, stride, offset, is_view = AS_STRIDED[name]
    module = Fn(lambda x: torch.as_strided(x * 2, size, stride, offset) + 1)
    x = torch.randn(shape)
    program = assert_decomposed_matches_eager(module, (x,), [])
    assert (aten.view.default in targets(program)) == is_view
    assert (aten.as_strided.default in targets(program)) != is_view


def test_as_strided_of_a_non_contiguous_tensor_is_left_alone():
    module = Fn(lambda x: torch.as_strided(x.t(), (4, 3), (3, 1)) * 2)
    program = assert_decomposed_matches_eager(module, (torch.randn(3, 4),), [])
    assert aten.as_strided.default in targets(program)


def test_as_strided_with_a_dynamic_batch():
    """[s0, 6] strides [6, 1] of a contiguous [s0, 2, 3] is a view; the same
    sizes of an [s0, 3, 2] transposed to [s0, 2, 3] are not."""
    batch = (({0: torch.export.Dim("batch", min=2, max=64)},),)  # forward(*args)
    view = Fn(lambda x: torch.as_strided(x + 1, (x.shape[0], 6), (6, 1)))
    gather = Fn(lambda x: torch.as_strided((x + 1).transpose(1, 2), (x.shape[0], 6), (6, 1)))
    x = torch.randn(4, 2, 3)
    program = assert_decomposed_matches_eager(view, (x,), [aten.as_strided.default],
                                              dynamic_shapes=batch)
    other = torch.randn(7, 2, 3)
    torch.testing.assert_close(program.module()(other), view(other))
    program = exported_program(gather, (x.transpose(1, 2).contiguous(),), dynamic_shapes=batch)
    assert aten.as_strided.default in targets(program)
