"""The committed torch-mlir exports (test/Inputs/torch-mlir) and MLIR 22.

(a) they are what test/torch_models/export.py produces today;
(b) MLIR 22 (dice-opt) parses each one and reprints it stably;
(c) sdpa_attention, which holds a tm_tensor op, parses, and that op stays
    outside kernel requests with a remark;
(d) modules with non-persistent buffers export, and bfloat16 constants.
"""

import os
import subprocess
import sys

import pytest
import torch

from build_tree import BUILD_DIR, SOURCE_ROOT

DICE_OPT = BUILD_DIR / "bin" / "dice-opt"
INPUTS = SOURCE_ROOT / "test" / "Inputs" / "torch-mlir"

sys.path.insert(0, str(SOURCE_ROOT / "test" / "torch_models"))
import export  # noqa: E402
import models  # noqa: E402

PARSEABLE = list(models.MODELS)
CRASH_MARKERS = ("Stack dump", "PLEASE submit a bug report")


def dice_opt(*args):
    assert DICE_OPT.exists(), f"no dice-opt at {DICE_OPT} (set DICE_BUILD_DIR)"
    return subprocess.run(
        [str(DICE_OPT), *map(str, args)], capture_output=True, text=True, timeout=60
    )


def test_exports_up_to_date():
    stale, report = export.stale_files(INPUTS)
    assert not stale, (
        "\n".join(report)
        + f"\nstale: {stale}; refresh with "
        "`python test/torch_models/export.py --out test/Inputs/torch-mlir`"
        + f" (pinned {export.PINNED}, installed {export.installed_versions()})"
    )


@pytest.mark.parametrize("name", PARSEABLE)
def test_export_round_trips(name, tmp_path):
    source = INPUTS / f"{name}.mlir"
    assert source.exists(), f"{source} is not committed"
    first, second = tmp_path / "a.mlir", tmp_path / "b.mlir"
    for src, dst in ((source, first), (first, second)):
        proc = dice_opt(src, "-o", dst)
        assert proc.returncode == 0, f"dice-opt {src} failed:\n{proc.stderr}"
    text = first.read_text()
    assert f"func.func @{name}(" in text
    assert first.read_bytes() == second.read_bytes(), "dice-opt output is not stable"


@pytest.mark.parametrize("name,dialect", sorted(models.UNKNOWN_DIALECT_OPS.items()))
def test_unknown_dialect_ops_stay_outside_requests(name, dialect):
    source = INPUTS / f"{name}.mlir"
    assert source.exists(), f"{source} is not committed"
    assert f'"{dialect}.' in source.read_text(), f"{source} has no generic {dialect} op"
    proc = dice_opt(source, "--dice-outline=granularity=fusion", "-o", os.devnull)
    assert proc.returncode == 0, f"exit {proc.returncode}:\n{proc.stderr}"
    assert not any(m in proc.stderr for m in CRASH_MARKERS), proc.stderr
    assert f"is an op of dialect '{dialect}', which dice-opt does not know" in proc.stderr


class SortRelu(torch.nn.Module):
    """A sort (torch-mlir's tm_tensor.sort) between elementwise ops."""

    def forward(self, x):
        return torch.relu(torch.sort(x * 2.0, dim=1).values) + 1.0


def test_a_sort_goes_into_a_request(tmp_path):
    """tm_tensor.sort, read by name, is outlined like a linalg op: no
    remark, and at function granularity one request computes it all, its
    reference program a stable argsort and a gather by it."""
    from dice.torch_mlir_import import export_linalg_on_tensors
    text = export_linalg_on_tensors(SortRelu(), [torch.randn(4, 6)], func_name="f")
    assert '"tm_tensor.sort"' in text  # generic form: MLIR 22 has not its syntax
    path = tmp_path / "f.mlir"
    path.write_text(text)
    out = tmp_path / "out.mlir"
    proc = dice_opt(path, "--dice-outline=granularity=function", "--dice-scaffold", "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert "tm_tensor.sort" not in proc.stderr
    outlined = out.read_text()
    assert outlined.count("dice.kernel_request") == 1, outlined
    assert "torch.argsort(" in outlined and "stable=True" in outlined


class CumsumRelu(torch.nn.Module):
    """A cumulative sum (torch-mlir's tm_tensor.scan) between elementwise
    ops."""

    def forward(self, x):
        return torch.relu(torch.cumsum(x * 2.0, dim=1)) + 1.0


def test_a_scan_goes_into_a_request(tmp_path):
    """tm_tensor.scan, read by name, is outlined like a linalg op: no
    remark, and at function granularity one request computes it all."""
    from dice.torch_mlir_import import export_linalg_on_tensors
    path = tmp_path / "f.mlir"
    path.write_text(export_linalg_on_tensors(CumsumRelu(), [torch.randn(4, 6)], func_name="f"))
    out = tmp_path / "out.mlir"
    proc = dice_opt(path, "--dice-outline=granularity=function", "--dice-scaffold", "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert "tm_tensor.scan" not in proc.stderr
    outlined = out.read_text()
    assert outlined.count("dice.kernel_request") == 1, outlined
    assert "torch.cumsum(" in outlined


class BiasedConvolutions(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(4, 6, 3)
        self.up = torch.nn.ConvTranspose2d(4, 5, 3, stride=2)

    def forward(self, x):
        return torch.relu(self.conv(x)), self.up(x)


def test_a_bias_is_read_at_its_size(tmp_path):
    """torch-mlir spreads a convolution's bias over the result with a
    linalg.broadcast of the weight; the request takes the bias itself and
    the broadcast, not a tensor of the result's size made outside."""
    from dice.train.prepare import program_requests
    import inspect
    source = "import torch\n" + inspect.getsource(BiasedConvolutions).replace(
        "class BiasedConvolutions", "class Model") + \
        "\ndef get_inputs():\n    return [torch.randn(2, 4, 9, 7)]\n" \
        "\ndef get_init_inputs():\n    return []\n"
    (request,) = program_requests(source, "f")
    shapes = [i["shape"] for i in request["program"]["inputs"]]
    assert [6] in shapes and [5] in shapes, shapes
    assert all(s[:2] not in ([2, 6], [2, 5]) for s in shapes), shapes  # no result-sized input
    assert request["python"].count(".expand(") == 2, request["python"]


def test_a_module_without_them_keeps_its_custom_form():
    from dice.torch_mlir_import import export_linalg_on_tensors
    text = export_linalg_on_tensors(torch.nn.ReLU(), [torch.randn(3)], func_name="f")
    assert "func.func @f(" in text and '"func.func"' not in text


class RotaryScale(torch.nn.Module):
    """Non-persistent buffers, as real models register rotary tables and
    masks: torch-mlir's frozen import cannot find them by itself."""

    def __init__(self):
        super().__init__()
        angles = torch.arange(8, dtype=torch.float32)[:, None] * torch.arange(4)[None, :] / 4
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("mask", torch.tril(torch.ones(8, 8)), persistent=False)
        self.register_buffer("scale", torch.full((4,), 0.5))

    def forward(self, x):
        return (self.mask @ (x * self.cos)) * self.scale


def test_non_persistent_buffers_export_and_stay_non_persistent():
    from dice.plan import run_plan
    from dice.pipeline import plan_of
    from dice.torch_mlir_import import export_linalg_on_tensors

    module = RotaryScale().eval()
    x = torch.randn(8, 4)
    text = export_linalg_on_tensors(module, (x,))
    # The buffers' values are in the program: its plan computes the module.
    outlined = subprocess.run([str(DICE_OPT), "--dice-outline", "--dice-scaffold"], input=text,
                              capture_output=True, text=True, timeout=60)
    assert outlined.returncode == 0, outlined.stderr
    plan = plan_of(outlined.stdout)
    fresh = torch.randn(8, 4)
    torch.testing.assert_close(run_plan(plan, [fresh])[0], module(fresh))
    assert module._non_persistent_buffers_set == {"cos", "mask"}
    assert set(module.state_dict()) == {"scale"}


def test_bfloat16_constants_export():
    """A bfloat16 module's constants (its buffers, baked into the program)
    export: torch-mlir reads a bfloat16 literal through ml_dtypes."""
    from dice.plan import run_plan
    from dice.pipeline import plan_of
    from dice.torch_mlir_import import export_linalg_on_tensors

    module = RotaryScale().eval().to(torch.bfloat16)
    x = torch.randn(8, 4, dtype=torch.bfloat16)
    text = export_linalg_on_tensors(module, (x,))
    outlined = subprocess.run([str(DICE_OPT), "--dice-outline", "--dice-scaffold"], input=text,
                              capture_output=True, text=True, timeout=60)
    assert outlined.returncode == 0, outlined.stderr
    fresh = torch.randn(8, 4, dtype=torch.bfloat16)
    torch.testing.assert_close(run_plan(plan_of(outlined.stdout), [fresh])[0], module(fresh))
