"""What the faithfulness suites share: fresh inputs, the relative error
against eager, and a plan run through the ATen executor (C++)."""

import torch

from build_tree import tool


def relative_error(actual, expected):
    """max |actual - expected| / max |expected| (the absolute error when the
    expected values are all zero)."""
    scale = expected.abs().max().item() or 1.0
    return (actual.double() - expected.double()).abs().max().item() / scale


def fresh_inputs(example, seed):
    """Normal inputs of the example inputs' shapes and dtypes."""
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(x.shape, generator=generator, dtype=x.dtype) for x in example]


def run_aten(plan_path, inputs, tmp_path):
    """The outputs of `dice-reference-run --plan` on `inputs`."""
    inputs_path, outputs_path = tmp_path / "inputs.pt", tmp_path / "outputs.pt"
    torch.save(list(inputs), inputs_path)
    tool("dice-reference-run", "--plan", plan_path, "--inputs", inputs_path,
         "--outputs", outputs_path)
    return torch.load(outputs_path)
