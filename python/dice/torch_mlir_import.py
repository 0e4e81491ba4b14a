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
import re
import warnings

import torch


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

    leaves = [x for x in torch.utils._pytree.tree_leaves(inputs) if isinstance(x, torch.Tensor)]
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
                if type_.typeid == ir.RankedTensorType.static_typeid and \
                        not ir.RankedTensorType(type_).has_static_shape:
                    entries["dice.example_shape"] = ir.DenseI64ArrayAttr.get(list(leaf.shape))
                attrs.append(ir.DictAttr.get(entries))
            if any(len(a) for a in attrs):
                op.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)


def export_linalg_on_tensors(module, inputs, func_name="forward", **options):
    """Returns the linalg-on-tensors MLIR text of `module(*inputs)`.

    `module` is an nn.Module or a torch.export ExportedProgram; `options` go
    to `torch_mlir.fx.export_and_import` (for example `dynamic_shapes`).
    """
    from torch_mlir import fx

    with warnings.catch_warnings(), buffers_made_persistent(module):
        # torch.export's pytree deprecation notices say nothing about the IR.
        warnings.simplefilter("ignore", FutureWarning)
        mlir = fx.export_and_import(
            module,
            *inputs,
            output_type="linalg-on-tensors",
            func_name=func_name,
            **options,
        )
    record_example_shapes(mlir, func_name, inputs)
    text = str(mlir)
    if UNKNOWN_DIALECT_OP.search(text):
        text = mlir.operation.get_asm(print_generic_op_form=True)
    return text.rstrip("\n") + "\n"
