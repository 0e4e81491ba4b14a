"""Programs whose result does not tell their inputs apart.

The grammar keeps every function inside its domain, but it cannot see
everything a value's magnitude does: a scale of 2^-12 before `x - tanh(x)`
in float16, a clamp after a value that always exceeds it, a `where` whose
threshold the value never crosses. Such a program's result is (within
rounding) the same for any input, so the verifier cannot tell a right
kernel from a constant one: its input-dependence check calls a kernel that
keeps bit for bit the same result `incorrect` whenever the reference's
float64 result moved, and a constant would pass its tolerance anyway.
Neither is a kernel worth learning. The engine drops such programs.

The test runs the program's printed PyTorch form on the CPU, in its own
dtypes, on the verifier's first two trial distributions (normal(0, 1) and
uniform(-1, 1); integers in [-64, 64), indices in range, bools random
bits) and calls a
result degenerate when the second trial's result is within the verifier's
tolerance of the first one's (docs/verifier.md, "Correctness"): then the
first result would be accepted for the second inputs. Integer and bool
results must differ in at least one element.
"""

import torch

# The verifier's default element tolerance (`atol` x rms(ref) + `rtol` x |ref|)
# per result dtype; the half types share half_atol and half_rtol.
TOLERANCE = {torch.float32: 1e-4, torch.float64: 1e-4, torch.float16: 1e-2,
             torch.bfloat16: 1e-2}
SEED = 20240


# Drawing fresh values for every program costs more than running most
# programs: inputs are cut from one pool of draws per trial, each at its own
# offset, grown as programs need.
_POOLS = {}


def _pool(trial, numel):
    pool = _POOLS.get(trial)
    if pool is None or pool.numel() < numel:
        generator = torch.Generator().manual_seed(SEED + trial)
        size = max(numel, 1 << 20)
        pool = (torch.randn(size, generator=generator) if trial == 0 else
                torch.rand(size, generator=generator) * 2 - 1)
        _POOLS[trial] = pool
    return pool


def trial_inputs(examples, trial, index_bounds=None):
    """The inputs of trial 0 (normal) or 1 (uniform(-1, 1)) in the examples'
    shapes and dtypes; an input of indices (`index_bounds[k]` > 0, see
    dice.engine.program.index_bounds) in [0, bound)."""
    generator = torch.Generator().manual_seed(SEED + trial)
    made = []
    for k, x in enumerate(examples):
        bound = index_bounds[k] if index_bounds else 0
        if x.dtype == torch.bool:
            made.append(torch.randint(0, 2, x.shape, generator=generator).bool())
        elif bound:
            made.append(torch.randint(0, bound, x.shape, generator=generator).to(x.dtype))
        elif not x.dtype.is_floating_point:
            made.append(torch.randint(-64, 64, x.shape, generator=generator).to(x.dtype))
        else:
            offset = 4099 * k  # inputs at their own offsets: never equal elementwise
            values = _pool(trial, offset + x.numel())[offset:offset + x.numel()]
            made.append(values.view(x.shape).to(x.dtype, copy=True))
    return made


def indistinguishable(first, second):
    """Whether `first` would pass for `second` (the same shape and dtype)."""
    if first.dtype not in TOLERANCE:
        return torch.equal(first, second)
    if not torch.equal(first.isnan(), second.isnan()):
        return False
    a, b = first.double(), second.double()
    finite = torch.isfinite(b)
    if not torch.equal(a[~finite].nan_to_num(), b[~finite].nan_to_num()):
        return False  # infinities of another sign or place
    a, b = a[finite], b[finite]
    if b.numel() == 0:
        return True
    t = TOLERANCE[first.dtype]
    rms = b.square().mean().sqrt()
    return bool(((a - b).abs() <= t * rms + t * b.abs()).all())


def degenerate_result(reference_code, index_bounds=None):
    """The index of the first result of the program (a Model and get_inputs,
    as the scaffold prints it) that does not tell the two trials' inputs
    apart, or None when every result does. `index_bounds`: per input, the
    range of its indices (0: not indices)."""
    scope = {}
    exec(compile(reference_code, "<reference>", "exec"), scope)
    model = scope["Model"](*scope["get_init_inputs"]())
    with torch.device("meta"):  # only the shapes and dtypes: no values drawn
        examples = scope["get_inputs"]()
    results = []
    with torch.inference_mode():
        for trial in (0, 1):
            out = model(*trial_inputs(examples, trial, index_bounds))
            results.append(out if isinstance(out, (tuple, list)) else (out,))
    for i, (first, second) in enumerate(zip(*results)):
        if indistinguishable(first, second):
            return i
    return None
