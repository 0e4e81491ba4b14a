"""Light kernel libraries loaded from Python.

A light build (KernelBuild's Light mode) compiles a candidate against the
light tensor API and registers its operator through libDiceLightBridge.so at
load time. The libraries are built by the kernel-build unit tests
(dice-kernel-build-tests, into DICE_KERNEL_BUILD_TEST_CACHE); here
`torch.ops.load_library` must register `dice::k_<fp>` with the request's
schema, and calling its CUDA kernel on CPU tensors (no GPU here) must run the
candidate's host code: its TORCH_CHECK messages and its results come back
through the dispatcher.
"""

import os
import subprocess
from pathlib import Path

import pytest

from build_tree import BUILD_DIR

torch = pytest.importorskip("torch")

TESTS = BUILD_DIR / "bin" / "dice-kernel-build-tests"
BRIDGE = BUILD_DIR / "lib" / "libDiceLightBridge.so"


@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    if not TESTS.exists() or not BRIDGE.exists():
        pytest.skip("dice-kernel-build-tests or libDiceLightBridge.so is not built")
    if not Path("/usr/local/cuda/bin/nvcc").exists():
        pytest.skip("no nvcc")
    cache = tmp_path_factory.mktemp("light-cache")
    proc = subprocess.run(
        [str(TESTS), "--gtest_filter=LightBuild.HonestAddRegistersFromCpp:"
                     "LightBuild.CpuOnlyCandidateBuildsLight:"
                     "LightBuild.MessagesFormatLikeLibTorch"],
        env={**os.environ, "DICE_KERNEL_BUILD_TEST_CACHE": str(cache)},
        capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[  SKIPPED" not in proc.stdout, proc.stdout
    found = {p.name: p for p in cache.rglob("k_light_*.so")}
    assert {"k_light_add.so", "k_light_cpu.so", "k_light_messages.so"} <= set(found), found
    for library in found.values():
        torch.ops.load_library(str(library))
    return found


def cuda_kernel(op):
    """Calls the operator's CUDA kernel whatever the inputs' device is."""
    keys = torch._C.DispatchKeySet(torch._C.DispatchKey.CUDA)
    return lambda *args: op.default.redispatch(keys, *args)


def test_load_library_registers_the_schema(libraries):
    op = torch.ops.dice.k_light_add
    assert str(op.default._schema) == "dice::k_light_add(Tensor x0, Tensor x1) -> Tensor"
    assert torch._C._dispatch_has_kernel_for_dispatch_key("dice::k_light_add", "CUDA")
    assert not torch._C._dispatch_has_kernel_for_dispatch_key("dice::k_light_add", "CPU")
    assert (str(torch.ops.dice.k_light_cpu.default._schema)
            == "dice::k_light_cpu(Tensor x0, Tensor x1) -> Tensor[]")


def test_torch_check_surfaces_as_a_torch_error(libraries):
    a = torch.ones(4)
    with pytest.raises(RuntimeError, match="inputs must be CUDA tensors"):
        cuda_kernel(torch.ops.dice.k_light_add)(a, a)


def test_candidate_host_code_runs_through_the_dispatcher(libraries):
    x0 = torch.arange(6, dtype=torch.float32).reshape(2, 3).t()  # not contiguous
    x1 = torch.ones(5, dtype=torch.float16)
    flat, filled, zeros = cuda_kernel(torch.ops.dice.k_light_cpu)(x0, x1)
    expected = x0.contiguous().view(-1).clone()
    expected[0] = 3 * 100 + 1  # sizes()[0] * 100 + stride(0) of x0
    assert torch.equal(flat, expected)
    assert torch.equal(filled, torch.full((2,), 3.5))
    assert zeros.dtype == torch.int64 and torch.equal(zeros, torch.zeros(5, dtype=torch.int64))
    # The inputs are untouched: contiguous() copied the transposed view.
    assert x0[0, 0].item() == 0
    with pytest.raises(RuntimeError, match="x0 must be 2-D, got 1 dims"):
        cuda_kernel(torch.ops.dice.k_light_cpu)(torch.ones(3), x1)


def test_messages_format_as_libtorch_formats_them(libraries):
    # What c10::str writes for the same arguments in LibTorch (an
    # ostringstream): sizes as a list, dtype and device by name, floats
    # with 6 significant digits, bools as 1.
    with pytest.raises(RuntimeError) as raised:
        cuda_kernel(torch.ops.dice.k_light_messages)(torch.ones(2, 3))
    assert ("x0 is 2-D: sizes [2, 3], dtype Float, device cpu, scale 2.5, "
            "half 1.5, flag 1, count 6000000000000") in str(raised.value)
