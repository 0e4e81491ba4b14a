"""KernelBench's correctness check of one trial: the same number of
outputs, the same shapes, and torch.allclose within atol and rtol."""

import torch


def _outputs(value):
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _outputs(v)]
    return [value if isinstance(value, torch.Tensor) else torch.as_tensor(value)]


def compare(got, expected, atol, rtol):
    """(passed, max |got - expected|, mean |got - expected|, why it failed or
    None); the differences are None where the outputs do not line up."""
    got, expected = _outputs(got), _outputs(expected)
    if len(got) != len(expected):
        return False, None, None, f"{len(got)} outputs, expected {len(expected)}"
    passed, worst, total, count = True, 0.0, 0.0, 0
    for g, e in zip(got, expected):
        if g.shape != e.shape:
            return False, None, None, f"output shape {tuple(g.shape)}, expected {tuple(e.shape)}"
        if e.numel() == 0:
            continue
        diff = (g.detach().double() - e.detach().double().to(g.device)).abs()
        worst = max(worst, diff.max().item())
        total, count = total + diff.sum().item(), count + diff.numel()
        passed = passed and torch.allclose(g.to(e.dtype).to(e.device), e, atol=atol, rtol=rtol)
    return passed, worst, (total / count if count else 0.0), \
        (None if passed else "outputs differ beyond atol/rtol")
