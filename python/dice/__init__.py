"""DICE: compile PyTorch programs with verified, model-generated CUDA kernels.

Python side of the compiler: torch-mlir import (`dice.torch_mlir_import`),
example programs (`dice.examples`) and the command line (`python -m dice`).
"""

__version__ = "0.1.0"
