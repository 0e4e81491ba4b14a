"""What the import adds to torch-mlir's handling of an exported program.

torch-mlir lowers an ExportedProgram after decomposing it with its default
table (`torch_mlir.extras.fx_decomp_util.get_decomposition_table`). Some ops
survive that table and then fail to lower:

- `aten.fmod.Scalar`, `aten.remainder.Scalar_Tensor`, `aten.bitwise_or.Scalar`
  and `aten.bitwise_xor.Scalar` (a Python number on one side): torch-mlir
  lowers only their tensor-tensor overloads. torch's own decompositions of
  fmod and remainder are references to `prims.fmod` / `prims.remainder`,
  which torch-mlir does not lower either, so the number is made a 0-d
  tensor of the result's dtype here instead.
- `aten.__lshift__.Tensor` and `aten.__rshift__.Tensor` (`a << b` of two
  tensors): torch-mlir lowers them as `bitwise_left_shift` and
  `bitwise_right_shift`, the same ops under their other names, only.
- `aten.index_reduce`: torch-mlir lowers scatter_reduce, not index_reduce,
  which is a scatter_reduce of the index spread over the source's shape.
- `aten.diagonal_scatter` (a write into a diagonal view): a select between
  the tensor and the source spread over the diagonal's rows;
  `aten.as_strided_scatter` (a write into a strided view of the storage,
  what `fill_diagonal_` becomes): an index_put at the storage positions.
- `aten._embedding_bag` (and `_embedding_bag_forward_only`, what export
  gives under no_grad): torch-mlir's lowering takes mode sum only, and
  torch has no decomposition. `embedding_bag` below writes it with a
  bag-membership matrix (a comparison of positions with offsets) and a
  matmul or a masked max: ops that lower to plain linalg.

And one graph rewrite: torch's decompositions (group_norm's among them) emit
`aten.as_strided` to reshape a contiguous tensor; torch-mlir's importer wants
its sizes static, which a dynamic batch is not. A contiguous as_strided of a
contiguous tensor is a view, and `views_for_as_strided` makes it one.

And another: torch-mlir folds a comparison of a constant floating-point
tensor with an integer (`torch.full(..., 2.0) > 1`, what
`cosine_embedding_loss`'s `target == 1` becomes for a constant target)
to the wrong truth value, and the program it gives computes something
else. PyTorch compares in the tensor's dtype either way, so
`float_scalars_for_comparisons` makes such an integer a float first. Only
there: a comparison with a float lowers otherwise (through float64), and a
tensor computed from the inputs is never folded.

And a correction: torch's `aten.lstm.input` kernel (its decomposition and
its meta function) squeezes each layer's final state on the batch dim, not
the layer dim, so for a batch of more than one the final hidden and cell
states have a dim too many, in the export's trace as in the decomposed
program. `corrected_python_kernels` runs `lstm_input`, which gives them
the initial states' shape, while a program is exported.

And one rewrite before the decomposition, two after. An elementwise op of
tensors of different dtypes computes in their common dtype in eager
PyTorch, but torch's meta functions and decompositions of some
(threshold_backward's, hardtanh_backward's) give the first operand's dtype,
and torch-mlir fails on others (clamp with bounds of another dtype). `common_dtype_operands` casts such operands to the common
dtype first, as eager does, so that no decomposition sees mixed dtypes.
torch-mlir faults on 8-bit integer arithmetic with a Python number and
widens uint8 as if signed in a sum: `eight_bit_arithmetic_in_int32` and
`widened_reduction_inputs` give it int32 arithmetic and explicit widening
casts instead, which compute the same values.
"""

import contextlib

import torch
from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes
from torch.fx.experimental.symbolic_shapes import statically_known_true

aten = torch.ops.aten

MODE_SUM, MODE_MEAN, MODE_MAX = 0, 1, 2


def number_as_tensor(tensor_overload):
    """A `.Scalar` overload (a tensor and a Python number) as
    `tensor_overload` of the tensor and the number as a 0-d tensor, both of
    the result's dtype."""
    def decomposed(x, other):
        dtype = torch.result_type(x, other)
        return tensor_overload(x.to(dtype), torch.scalar_tensor(other, dtype=dtype,
                                                                device=x.device))
    return decomposed


def remainder_scalar_tensor(number, y):
    dtype = torch.result_type(number, y)
    return aten.remainder.Tensor(torch.scalar_tensor(number, dtype=dtype, device=y.device),
                                 y.to(dtype))


def index_reduce(x, dim, index, source, reduce, include_self=True):
    """`aten.index_reduce` as the scatter_reduce it is: source's slice i goes
    to x's slice index[i] along `dim`, the index spread over the source's
    shape. torch-mlir lowers scatter_reduce and not index_reduce."""
    dim = dim % source.dim() if source.dim() else 0
    shape = [1] * source.dim()
    shape[dim] = index.numel()
    spread = index.reshape(shape).expand(source.shape)
    return aten.scatter_reduce.two(x, dim, spread, source, reduce, include_self=include_self)


def diagonal_scatter(x, source, offset=0, dim1=0, dim2=1):
    """`aten.diagonal_scatter` (a write into `x.diagonal(offset, dim1,
    dim2)`) as a select: x where an element is off that diagonal, else the
    source's element at its place along it. torch-mlir has no lowering of
    the op itself."""
    dim1, dim2 = dim1 % x.dim(), dim2 % x.dim()
    if dim1 > dim2:  # the same elements, in the same order
        dim1, dim2, offset = dim2, dim1, -offset
    if source.shape[-1] == 0:  # an offset past the edge: no diagonal
        return x.clone()
    shape = [1] * x.dim()
    rows = torch.arange(x.shape[dim1], device=x.device).reshape(
        shape[:dim1] + [-1] + shape[dim1 + 1:])
    columns = torch.arange(x.shape[dim2], device=x.device).reshape(
        shape[:dim2] + [-1] + shape[dim2 + 1:])
    on_diagonal = (columns - rows) == offset
    # Row i holds the diagonal's element i - max(-offset, 0), wherever it is
    # on the diagonal at all (clamped elsewhere, where the select drops it).
    along = (torch.arange(x.shape[dim1], device=x.device) - max(-offset, 0)).clamp(
        0, source.shape[-1] - 1)
    spread = source.index_select(-1, along).movedim(-1, dim1).unsqueeze(dim2)
    return torch.where(on_diagonal, spread, x)


def as_strided_scatter(x, source, size, stride, storage_offset=None):
    """`aten.as_strided_scatter` (a write into a strided view of x's
    storage: what `fill_diagonal_` decomposes into) as an index_put of the
    source into x's elements in storage order, at the storage positions the
    view's sizes and strides give. torch-mlir has no lowering of the op."""
    order = sorted(range(x.dim()), key=lambda d: -x.stride(d))  # storage order
    stored = x.permute(order)
    position = torch.full((), (storage_offset or 0) - x.storage_offset(), dtype=torch.int64,
                          device=x.device)
    for d, (n, step) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[d] = n
        position = position + (torch.arange(n, device=x.device) * step).reshape(shape)
    written = stored.reshape(-1).index_put((position.reshape(-1),), source.reshape(-1))
    return written.reshape(stored.shape).permute([order.index(d) for d in range(x.dim())])


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=MODE_SUM,
                  sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=-1, forward_only=False):
    """`aten._embedding_bag` (forward): the 4 results eager CPU PyTorch gives.

    Position p of `indices` is in the bag of the last offset at or before it
    (offsets[0] is 0, offsets do not decrease: PyTorch checks or assumes
    both); positions holding `padding_idx` (>= 0) are in no bag. A bag's
    sum is its rows' (times `per_sample_weights`), its mean that over the
    rows counted, its max that of each column; an empty bag gives zeros.
    """
    num_bags = offsets.size(0) - (1 if include_last_offset else 0)
    positions = torch.arange(indices.size(0), device=indices.device)
    starts = offsets[:num_bags]
    offset2bag = (starts.unsqueeze(1) <= positions).sum(0).to(offsets.dtype) - 1
    member = offset2bag == torch.arange(num_bags, device=offsets.device).unsqueeze(1)
    if padding_idx >= 0:
        member = member & (indices != padding_idx)
    bag_size = member.sum(1).to(offsets.dtype)
    rows = aten.embedding.default(weight, indices)
    nonempty = (bag_size > 0).unsqueeze(1)

    if mode == MODE_MAX:
        candidates = torch.where(member.unsqueeze(2), rows, float("-inf"))
        values, position = candidates.max(1)
        output = torch.where(nonempty, values, 0)
        max_indices = torch.where(nonempty, indices[position].to(offsets.dtype), 0)
    else:
        scale = member.to(weight.dtype)
        if per_sample_weights is not None:
            scale = scale * per_sample_weights
        output = scale @ rows
        if mode == MODE_MEAN:
            output = output / bag_size.clamp(min=1).unsqueeze(1).to(weight.dtype)
        if mode == MODE_SUM:
            # Eager's sum leaves its counts zero (and the whole offsets'
            # length when it needs no gradient).
            bag_size = torch.zeros_like(offsets if forward_only else bag_size)
        max_indices = bag_size  # eager returns the same tensor twice

    # Eager's fast sum (float or half weights, no padding) skips offset2bag.
    if mode == MODE_SUM and weight.dtype in (torch.float, torch.half) and padding_idx < 0:
        offset2bag = offsets.new_zeros(0)
    return output, offset2bag, bag_size, max_indices


def embedding_bag_forward_only(*args):
    return embedding_bag(*args, forward_only=True)


def lstm_input(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
               batch_first):
    """`aten.lstm.input`: torch's decomposition with its final states of the
    initial states' shape, `[layers * directions, batch, hidden]`. torch's
    squeezes a layer's state on the batch dim rather than the layer dim,
    so for a batch of more than one its final states gain a dim; their
    elements are in the same order either way."""
    from torch._decomp.decompositions import lstm_impl

    output, hidden, cell = lstm_impl(input, hx, params, has_biases, num_layers, dropout, train,
                                     bidirectional, batch_first)
    return output, hidden.reshape(hx[0].shape), cell.reshape(hx[1].shape)


# torch's Python kernels that compute the wrong shapes; export traces the
# program through them (they are the ops' meta functions too), so they are
# replaced while a program is exported and decomposed.
CORRECTED_KERNELS = {aten.lstm.input: lstm_input}


@contextlib.contextmanager
def corrected_python_kernels():
    """Within the block, each op of CORRECTED_KERNELS runs the project's
    kernel where torch registered its own Python kernel (for autograd,
    composite and meta dispatch alike)."""
    replaced = []
    for op, kernel in CORRECTED_KERNELS.items():
        for key, torch_kernel in list(op.py_kernels.items()):
            replaced.append((op, key, torch_kernel))
            op.py_kernels[key] = kernel
        op._dispatch_cache.clear()
    try:
        yield
    finally:
        for op, key, torch_kernel in replaced:
            op.py_kernels[key] = torch_kernel
            op._dispatch_cache.clear()


ADDITIONS = {
    aten.fmod.Scalar: number_as_tensor(aten.fmod.Tensor),
    aten.bitwise_or.Scalar: number_as_tensor(aten.bitwise_or.Tensor),
    aten.bitwise_xor.Scalar: number_as_tensor(aten.bitwise_xor.Tensor),
    aten.remainder.Scalar_Tensor: remainder_scalar_tensor,
    aten._embedding_bag.default: embedding_bag,
    aten._embedding_bag_forward_only.default: embedding_bag_forward_only,
    aten.lstm.input: lstm_input,
    aten.index_reduce.default: index_reduce,
    aten.diagonal_scatter.default: diagonal_scatter,
    aten.as_strided_scatter.default: as_strided_scatter,
    aten.__lshift__.Tensor: aten.bitwise_left_shift.Tensor,
    aten.__rshift__.Tensor: aten.bitwise_right_shift.Tensor,
}


def decomposition_table(base=None):
    """`base` (torch-mlir's default table if None) with the project's additions."""
    if base is None:
        from torch_mlir.extras.fx_decomp_util import get_decomposition_table
        base = get_decomposition_table()
    return {**base, **ADDITIONS}


def _value(arg):
    return arg.meta["val"] if isinstance(arg, torch.fx.Node) else arg


def _known_equal(a, b):
    return statically_known_true(a == b)


def _contiguous(size, stride):
    """Whether `stride` is provably the contiguous stride of `size` (a
    dimension of length 1 takes any stride)."""
    if len(size) != len(stride):
        return False
    expected = 1
    for length, step in reversed(list(zip(size, stride))):
        if not _known_equal(length, 1) and not _known_equal(step, expected):
            return False
        expected = expected * length
    return True


def _is_view(source, size, stride, storage_offset):
    """Whether as_strided(source, size, stride, storage_offset) provably reads
    all of `source`'s elements in order: then it is source.view(size)."""
    return (isinstance(source, torch.Tensor)
            and _contiguous(source.shape, source.stride())
            and _known_equal(source.storage_offset(), 0)
            and _known_equal(storage_offset, 0)
            and _contiguous(size, stride)
            and _known_equal(source.numel(), _product(size)))


def _product(values):
    result = 1
    for v in values:
        result = result * v
    return result


def views_for_as_strided(graph_module):
    """Rewrites, in place, each `aten.as_strided.default` of `graph_module`
    that is a view of a contiguous tensor as `aten.view.default`; returns how
    many. Any other as_strided is left as it is."""
    count = 0
    for node in graph_module.graph.nodes:
        if node.op != "call_function" or node.target != aten.as_strided.default:
            continue
        schema = aten.as_strided.default._schema
        args = dict(zip((a.name for a in schema.arguments), node.args), **node.kwargs)
        size, stride = args["size"], args["stride"]
        if not isinstance(size, (list, tuple)) or not isinstance(stride, (list, tuple)):
            continue
        offset = args.get("storage_offset")
        if _is_view(_value(args["self"]), [_value(s) for s in size],
                    [_value(s) for s in stride], 0 if offset is None else _value(offset)):
            # The node keeps its name: the graph signature may name it.
            node.target = aten.view.default
            node.args, node.kwargs = (args["self"], size), {}
            count += 1
    if count:
        graph_module.graph.lint()
        graph_module.recompile()
    return count


COMPARISONS = (aten.eq.Scalar, aten.ne.Scalar, aten.lt.Scalar, aten.le.Scalar,
               aten.gt.Scalar, aten.ge.Scalar)
# Integers a double holds exactly: float(n) is n, so the comparison, made
# in the tensor's dtype, rounds the same number as before.
EXACT_IN_DOUBLE = 2 ** 53


# Ops whose values do not depend on their tensor operand's values.
SHAPE_ONLY = (aten.full_like.default, aten.zeros_like.default, aten.ones_like.default,
              aten.empty_like.default, aten.new_full.default, aten.new_zeros.default,
              aten.new_ones.default, aten.new_empty.default)


def _constant(node, user_inputs, known):
    """Whether FX `node` is computed from none of `user_inputs` (names of
    placeholders; the others are weights and constants, which torch-mlir
    imports as literals), transitively; `known` memoizes."""
    stack = [node]
    while stack:
        n = stack[-1]
        if n in known:
            stack.pop()
            continue
        if n.op == "placeholder" or n.target in SHAPE_ONLY:
            known[n] = n.op != "placeholder" or n.name not in user_inputs
            stack.pop()
            continue
        pending = [a for a in n.all_input_nodes if a not in known]
        if pending:
            stack.extend(pending)
            continue
        known[n] = all(known[a] for a in n.all_input_nodes)
        stack.pop()
    return known[node]


def float_scalars_for_comparisons(program):
    """Rewrites, in place, each comparison of a constant floating-point
    tensor with a Python int (`aten.<cmp>.Scalar`) in ExportedProgram
    `program` to compare with the same number as a float; returns how many."""
    graph_module = program.graph_module
    user_inputs = set(program.graph_signature.user_inputs)
    count, known = 0, {}
    for node in graph_module.graph.nodes:
        if node.op != "call_function" or node.target not in COMPARISONS or len(node.args) != 2:
            continue
        tensor, number = node.args
        value = _value(tensor)
        if not isinstance(value, torch.Tensor) or not value.dtype.is_floating_point:
            continue
        if type(number) is not int or abs(number) > EXACT_IN_DOUBLE:
            continue
        if not isinstance(tensor, torch.fx.Node) or not _constant(tensor, user_inputs, known):
            continue
        node.args = (tensor, float(number))
        count += 1
    if count:
        graph_module.recompile()
    return count


def _calls(graph_module):
    """(node, its result) for each op call of `graph_module` whose result is
    one tensor; a list, so the caller may insert nodes as it goes."""
    return [(node, node.meta["val"]) for node in graph_module.graph.nodes
            if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload)
            and isinstance(node.meta.get("val"), torch.Tensor)]


def _recompiled(graph_module, count):
    """`count`, after checking and recompiling `graph_module` if it changed."""
    if count:
        graph_module.graph.lint()
        graph_module.recompile()
    return count


def _elementwise(node, operands, result):
    """Whether `node` computes elementwise over its tensor `operands`: a
    pointwise op, or an activation's backward (every operand the result's
    shape), which torch does not tag as pointwise."""
    if torch.Tag.pointwise in node.target.tags:
        return True
    return (node.target.name().endswith("_backward")
            and all(list(o.shape) == list(result.shape) for o in operands))


def common_dtype_operands(graph_module):
    """Casts, in place, each tensor operand of an elementwise op of
    `graph_module` to the dtype eager PyTorch computes the op in (the
    operands' common dtype; booleans, conditions and masks, stay as they
    are); returns how many casts were inserted. The op's own result dtype
    is not consulted: torch's meta functions of some ops (threshold_backward,
    hardtanh_backward) give the first operand's, where eager gives the
    common dtype."""
    count = 0
    for node, result in _calls(graph_module):
        operands = {i: _value(a) for i, a in enumerate(node.args) if isinstance(a, torch.fx.Node)}
        operands = {i: v for i, v in operands.items()
                    if isinstance(v, torch.Tensor) and v.dtype != torch.bool}
        if len({v.dtype for v in operands.values()}) < 2:
            continue
        if not _elementwise(node, operands.values(), result):
            continue
        _, common = elementwise_dtypes(
            *operands.values(), type_promotion_kind=ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT)
        args = list(node.args)
        for i, value in operands.items():
            if value.dtype != common:
                args[i] = _cast_before(graph_module, node, args[i], value, common)
                count += 1
        node.args = tuple(args)
    return _recompiled(graph_module, count)


def _cast_before(graph_module, node, operand, value, dtype):
    """A new node, before `node`: `operand` (whose value is `value`) cast to
    `dtype`."""
    with graph_module.graph.inserting_before(node):
        cast = graph_module.graph.call_function(aten._to_copy.default, (operand,),
                                                {"dtype": dtype})
    cast.meta["val"] = value.to(dtype)
    return cast


EIGHT_BIT = (torch.int8, torch.uint8)


def eight_bit_arithmetic_in_int32(graph_module):
    """Rewrites, in place, each elementwise op of `graph_module` whose result
    is an 8-bit integer to compute in int32 and cast its result back: the
    same values, since C++ (and so eager PyTorch) computes 8-bit arithmetic
    in int and truncates the result. torch-mlir faults on an 8-bit tensor
    times, minus or divided by a Python number, and lowers no 8-bit floor
    division. Returns how many ops were rewritten."""
    count = 0
    for node, result in _calls(graph_module):
        if result.dtype not in EIGHT_BIT or torch.Tag.pointwise not in node.target.tags:
            continue
        args = list(node.args)
        for i, arg in enumerate(args):
            value = _value(arg)
            if isinstance(value, torch.Tensor) and value.dtype in EIGHT_BIT:
                args[i] = _cast_before(graph_module, node, arg, value, torch.int32)
        with graph_module.graph.inserting_before(node):
            wide = graph_module.graph.call_function(node.target, tuple(args), dict(node.kwargs))
        wide.meta["val"] = result.to(torch.int32)
        # The node keeps its name (the graph signature may name it) and
        # becomes the cast back.
        node.target, node.args, node.kwargs = aten._to_copy.default, (wide,), {"dtype": result.dtype}
        count += 1
    return _recompiled(graph_module, count)


# Reductions whose result may be a wider integer than their input.
WIDENING_REDUCTIONS = (aten.sum.default, aten.sum.dim_IntList, aten.prod.default,
                       aten.prod.dim_int, aten.cumsum.default, aten.cumprod.default)


def widened_reduction_inputs(graph_module):
    """Casts, in place, the integer input of each reduction of `graph_module`
    whose result is another integer dtype (a uint8 sum is int64) to the
    result's dtype first: torch-mlir widens an unsigned input as if it were
    signed (a uint8 200 summed as -56). Returns how many casts."""
    count = 0
    for node, result in _calls(graph_module):
        value = _value(node.args[0]) if node.target in WIDENING_REDUCTIONS else None
        if not isinstance(value, torch.Tensor):
            continue
        if value.dtype in (result.dtype, torch.bool) or value.dtype.is_floating_point:
            continue
        if result.dtype.is_floating_point or result.dtype == torch.bool:
            continue
        node.args = (_cast_before(graph_module, node, node.args[0], value, result.dtype),
                     *node.args[1:])
        count += 1
    return _recompiled(graph_module, count)
