"""dice-curate: PyTorch/CUDA pairs filtered through the compiler's verifier
into CuKe-format training data (docs/curate.md).

A pair is kept when its kernel builds, passes the deception checks, is
correct and beats eager PyTorch by the threshold (2.0x by default, the
CuKe rule). The work is split where the machines are:

- `prepare` (where the compiler is: torch-mlir, dice-opt) turns each
  pair's PyTorch program into its kernel request: the reference program
  and `dice_forward` signature the verifier checks against;
- `verify` (on a GPU: torch, nvcc, dice-verify) times each program eagerly
  and verifies each kernel against that time;
- `report` (anywhere) writes the kept pairs, the report and its plot.

`run` does all three on a machine that has both.
"""
