"""PyTorch -> linalg-on-tensors MLIR text, through torch-mlir.

torch-mlir is built on a newer LLVM than the compiler's MLIR 22, so the two
exchange MLIR as text only: no bytecode, no shared Python bindings. The text
that the pinned torch-mlir prints for the project's models parses unchanged
with MLIR 22 (docs/dependencies.md). Ops of dialects MLIR 22 does not have
(torch-mlir's `tm_tensor`: scatter and index_put, sort, topk, cumulative
sums, attention where its decomposition is off) cannot be parsed in their
custom syntax, so a module holding them is printed in MLIR's generic form;
dice-opt keeps them outside kernel requests with a remark naming them.
"""

import contextlib
import inspect
import re
import warnings

import torch

from dice import decompositions
from dice.forked import call_in_fork


# An op of a dialect that torch-mlir has and MLIR 22 has not.
UNKNOWN_DIALECT_OP = re.compile(r"^\s*(%[^=]*=\s*)?tm_tensor\.", re.MULTILINE)


@contextlib.contextmanager
def buffers_made_persistent(module):
    """Every buffer of `module` persistent while the block runs.

    torch-mlir's importer freezes a module's state from its exported
    program's state dict, which leaves out non-persistent buffers (causal
    masks, rotary tables, as real models register them): the import then
    fails to find them. Their values are the module's state all the same.
    """
    saved = []
    if isinstance(module, torch.nn.Module):
        for sub in module.modules():
            saved.append((sub, set(sub._non_persistent_buffers_set)))
            sub._non_persistent_buffers_set.clear()
    try:
        yield
    finally:
        for sub, names in saved:
            sub._non_persistent_buffers_set.update(names)


def record_example_shapes(mlir, func_name, inputs):
    """Marks each argument of `func_name` that has a dynamic dimension with
    the shape it was exported at (`dice.example_shape`): the sizes dice-opt
    shows the DICE model and verifies at first (docs/passes.md).
    """
    from torch_mlir import ir

    # torch-mlir keeps a Python number in the signature too (an i64 or f64
    # argument), in its place among the tensors.
    leaves = [x for x in torch.utils._pytree.tree_leaves(inputs)
              if isinstance(x, (torch.Tensor, bool, int, float))]
    with mlir.context:
        for op in mlir.body.operations:
            if op.operation.name != "func.func" or \
                    ir.StringAttr(op.attributes["sym_name"]).value != func_name:
                continue
            types = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value).inputs
            if len(types) != len(leaves):
                return  # arguments that are not the user's tensors: no examples
            attrs = []
            for type_, leaf in zip(types, leaves):
                entries = {}
                if isinstance(leaf, torch.Tensor) and \
                        type_.typeid == ir.RankedTensorType.static_typeid and \
                        not ir.RankedTensorType(type_).has_static_shape:
                    entries["dice.example_shape"] = ir.DenseI64ArrayAttr.get(list(leaf.shape))
                attrs.append(ir.DictAttr.get(entries))
            if any(len(a) for a in attrs):
                op.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)


EXPORT_OPTIONS = ("decomposition_table", "dynamic_shapes", "strict")


def exported_program(module, inputs, decomposition_table=None, dynamic_shapes=None,
                     strict=False, **kwargs):
    """`module` (an nn.Module, exported here, or an ExportedProgram)
    decomposed for torch-mlir: by `decomposition_table` (torch-mlir's
    default if None) with the project's additions (torch's Python kernels
    that give wrong shapes replaced throughout), its elementwise ops' operands
    cast to their common dtype first, and then with its contiguous as_strided
    made views, its 8-bit integer arithmetic made int32, its integer
    reductions' inputs widened and its comparisons of floats with integers
    made comparisons with floats (dice.decompositions says why)."""
    with decompositions.corrected_python_kernels():
        if isinstance(module, torch.export.ExportedProgram):
            program = module
        else:
            program = torch.export.export(module, tuple(inputs), kwargs,
                                          dynamic_shapes=dynamic_shapes, strict=strict)
        decompositions.common_dtype_operands(program.graph_module)
        program = program.run_decompositions(
            decompositions.decomposition_table(decomposition_table))
    decompositions.views_for_as_strided(program.graph_module)
    decompositions.eight_bit_arithmetic_in_int32(program.graph_module)
    decompositions.widened_reduction_inputs(program.graph_module)
    decompositions.float_scalars_for_comparisons(program)
    return program


def export_linalg_on_tensors(module, inputs, func_name="forward", **options):
    """Returns the linalg-on-tensors MLIR text of `module(*inputs)`.

    `module` is an nn.Module or a torch.export ExportedProgram; `options` are
    those of `torch_mlir.fx.export_and_import` (for example `dynamic_shapes`,
    or `decomposition_table`: the table the project's additions extend). The
    program is exported and decomposed here (`exported_program`), and
    torch-mlir is given it with an empty table: decomposed once. torch-mlir
    lowers it in a forked child, so that a crash of its C++ raises
    dice.forked.NativeCrash here instead of ending the process.
    """
    from torch_mlir import fx

    # Options of the export and decomposition; those export_and_import does
    # not name are the module's keyword arguments, as they were there.
    importer = inspect.signature(fx.export_and_import).parameters
    export = {k: options.pop(k) for k in list(options)
              if k in EXPORT_OPTIONS or k not in importer}
    with warnings.catch_warnings(), buffers_made_persistent(module):
        # torch.export's pytree deprecation notices say nothing about the IR.
        warnings.simplefilter("ignore", FutureWarning)
        program = on_host(exported_program(module, inputs, **export))

        def lowered():
            mlir = fx.export_and_import(program, output_type="linalg-on-tensors",
                                        func_name=func_name, decomposition_table={}, **options)
            record_example_shapes(mlir, func_name, inputs)
            text = str(mlir)
            if UNKNOWN_DIALECT_OP.search(text):
                text = mlir.operation.get_asm(print_generic_op_form=True)
            return text.rstrip("\n") + "\n"

        return call_in_fork(lowered, f"torch-mlir's lowering of {func_name}")


def on_host(program):
    """`program` with its weights and constants in host memory: the lowering
    runs in a forked child (dice.forked), which cannot use CUDA."""
    tensors = [*program.state_dict.values(), *program.constants.values()]
    if all(not isinstance(t, torch.Tensor) or t.device.type == "cpu" for t in tensors):
        return program
    from torch.export.passes import move_to_device_pass
    return move_to_device_pass(program, "cpu")
