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
    text = str(mlir)
    if UNKNOWN_DIALECT_OP.search(text):
        text = mlir.operation.get_asm(print_generic_op_form=True)
    return text.rstrip("\n") + "\n"
