"""The torch-mlir hook on the CPU: models exported by torch-mlir, run through
dice's pipeline and the default inner backend (upstream MLIR passes, MLIR's
execution engine), match eager PyTorch on fresh inputs; the backend used the
torch-mlir way; a lowered module's kernel calls linked to a real kernel
library through the trampolines; bad modules named with their location."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn as nn

import dice.torch_mlir
from runtime_test_kernel import KERNEL_MODULE, SQUARE_T, TEST_KERNEL_LIBRARY
from build_tree import SOURCE_ROOT, tool
from dice.errors import DiceError
from dice.pipeline import requests, write_replay
from dice.torch_mlir import (CpuLinalgBackend, DiceLinalgOnTensorsBackend, InvocationError,
                             KernelLinkError, ModuleError)
from dice.torch_mlir_import import export_linalg_on_tensors

# Most tests here ask for no candidates (engine "none"): dice's warning says
# so once.
pytestmark = pytest.mark.filterwarnings("ignore:dice.torch_mlir. engine 'none'")


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(12, 32), nn.Linear(32, 5)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class ConvBnRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.bn = nn.BatchNorm2d(6)
        # Statistics that are not the identity, so that folding them matters.
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)
            self.bn.weight.uniform_(0.5, 1.5)
            self.bn.bias.uniform_(-0.2, 0.2)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


class NormSoftmax(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(16)

    def forward(self, x):
        return torch.softmax(self.norm(x) * 2.0, dim=-1)


class TwoOutputs(nn.Module):
    """Several results, one of them an integer tensor."""

    def forward(self, x, y):
        s = x + y
        return torch.tanh(s), s.sum(dim=1), torch.argmax(s, dim=1)


def generator(seed):
    return torch.Generator().manual_seed(seed)


MODELS = {
    "mlp": (Mlp, lambda g: [torch.randn(4, 12, generator=g)]),
    "conv_bn_relu": (ConvBnRelu, lambda g: [torch.randn(2, 3, 8, 8, generator=g)]),
    "layernorm_softmax": (NormSoftmax, lambda g: [torch.randn(3, 7, 16, generator=g)]),
    "two_outputs": (TwoOutputs, lambda g: [torch.randn(5, 6, generator=g),
                                           torch.randn(5, 6, generator=g)]),
}


def build(name):
    cls, make_inputs = MODELS[name]
    torch.manual_seed(0)
    return cls().eval(), make_inputs


@pytest.mark.parametrize("name", sorted(MODELS))
def test_compiled_model_matches_eager(name):
    model, make_inputs = build(name)
    compiled = dice.torch_mlir.compile(model, make_inputs(generator(1)), engine="none")
    for seed in (2, 3):
        fresh = make_inputs(generator(seed))
        with torch.no_grad():
            want = model(*fresh)
        got = compiled(*fresh)
        assert type(got) is type(want)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    # No candidates: nothing was replaced, and the module was outlined first.
    assert compiled.artifact.kernels == () and compiled.artifact.manifest is None
    assert "dice_k_" not in compiled.artifact.lowered


def test_engine_none_dice_says_so_and_falls_back():
    model, make_inputs = build("mlp")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = dice.torch_mlir.compile(model, make_inputs(generator(1)), engine="none")
    said = [str(w.message) for w in caught if "dice.torch_mlir" in str(w.message)]
    assert len(said) == 1 and "keeps its original ops" in said[0]
    # The two matmul requests resolved back to their ops, each with its reason.
    fallbacks = [r for r in compiled.artifact.remarks if "falling back" in r]
    assert len(fallbacks) == 2 and all("no candidates" in r for r in fallbacks)


class LinearRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 6)

    def forward(self, x):
        return torch.relu(self.fc(x))


@pytest.mark.shipped_model
def test_the_default_engine_is_the_shipped_model(tmp_path):
    """No engine named: the shipped model writes each request's candidate;
    without a GPU none runs, so each request keeps its ops and the results
    are eager PyTorch's."""
    model, x = LinearRelu().eval(), torch.randn(4, 8)
    fake_nvcc = SOURCE_ROOT / "test" / "Tools" / "dice-opt" / "Inputs" / "fake-nvcc.sh"
    config = tmp_path / "dice.toml"
    config.write_text("[sampling]\ncandidates = 1\n")  # one is enough to see whose
    backend = DiceLinalgOnTensorsBackend(workdir=tmp_path, config=config,
                                         extra_options=(f"nvcc={fake_nvcc}",))
    assert backend.engine == "model"
    artifact = backend.compile(export_linalg_on_tensors(model, [x], func_name="forward"))
    fallbacks = [r for r in artifact.remarks if "falling back" in r]
    assert fallbacks and not any("no candidates" in r for r in fallbacks), artifact.remarks
    assert artifact.kernels == ()
    got = backend.load(artifact).forward(x.numpy())
    torch.testing.assert_close(torch.from_numpy(got), model(x).detach())


def test_an_engine_must_be_named():
    with pytest.raises(DiceError, match="engine=None"):
        DiceLinalgOnTensorsBackend(engine=None)


def test_engine_candidates_that_fail_keep_the_original_ops(tmp_path):
    """The whole --dice-pipeline with an engine: the replayed candidate has
    no kernel source, the verifier says so, and the request falls back."""
    torch.manual_seed(0)
    model = LinearRelu().eval()
    example = [torch.randn(3, 8, generator=generator(1))]
    source = tmp_path / "linear_relu.mlir"
    source.write_text(export_linalg_on_tensors(model, example))
    found, _ = requests(source)
    assert len(found) == 1
    replay = tmp_path / "kernels.jsonl"
    write_replay(replay, [(found[0]["fingerprint"], "no kernel source here")])

    compiled = dice.torch_mlir.compile(model, example, engine=f"replay:{replay}")
    report = "\n".join(compiled.artifact.report)
    assert found[0]["fingerprint"][:12] in report and "compile_error" in report
    assert compiled.artifact.kernels == ()
    fresh = torch.randn(3, 8, generator=generator(2))
    torch.testing.assert_close(compiled(fresh), model(fresh), rtol=1e-5, atol=1e-5)


def test_backend_the_torch_mlir_way():
    """compile(module) -> artifact, load(artifact) -> invoker, numpy in and out,
    with the module as torch-mlir's own `ir.Module`."""
    from torch_mlir import fx

    model, make_inputs = build("two_outputs")
    example = make_inputs(generator(1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        module = fx.export_and_import(model, *example, output_type="linalg-on-tensors",
                                      func_name="forward")
    backend = DiceLinalgOnTensorsBackend(granularity="op", engine="none")
    invoker = backend.load(backend.compile(module))

    x, y = (t.numpy() for t in make_inputs(generator(4)))
    before = x.copy()
    got = invoker.forward(x, y)
    want = model(torch.from_numpy(x), torch.from_numpy(y))
    assert isinstance(got, tuple) and len(got) == 3
    assert all(isinstance(a, np.ndarray) for a in got)
    assert got[2].dtype == np.int64
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-5)
    assert np.array_equal(x, before), "the caller's array was written"

    with pytest.raises(InvocationError, match=r"argument 1 is 5x7xfloat32, the function "
                                              r"takes 5x6xfloat32"):
        invoker.forward(x, np.zeros((5, 7), np.float32))
    with pytest.raises(InvocationError, match="takes 2 arrays, got 1"):
        invoker.forward(x)
    with pytest.raises(AttributeError, match="no public function @backward"):
        invoker.backward


def test_inner_backend_alone_runs_linalg_text():
    text = export_linalg_on_tensors(build("layernorm_softmax")[0],
                                    MODELS["layernorm_softmax"][1](generator(1)))
    backend = CpuLinalgBackend()
    invoker = backend.load(backend.compile(text))
    x = torch.randn(3, 7, 16, generator=generator(6))
    got = invoker.forward(x.numpy())
    want = build("layernorm_softmax")[0](x)
    np.testing.assert_allclose(got, want.detach().numpy(), rtol=1e-5, atol=1e-6)


DYNAMIC_MODULE = """#map = affine_map<(d0) -> (d0)>
func.func @forward(%x: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %x, %c0 : tensor<?xf32>
  %e = tensor.empty(%d) : tensor<?xf32>
  %y = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%x : tensor<?xf32>) outs(%e : tensor<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<?xf32>
  return %y : tensor<?xf32>
}
"""


def test_dynamic_shapes_and_libm_functions():
    backend = DiceLinalgOnTensorsBackend(engine="none")
    invoker = backend.load(backend.compile(DYNAMIC_MODULE))
    for n in (3, 17):
        x = torch.randn(n, generator=generator(n)).numpy()
        np.testing.assert_allclose(invoker.forward(x), np.tanh(x), rtol=1e-6, atol=1e-7)


BAD_MODULE = """func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %y = linalg.frobnicate ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
"""


def test_bad_module_is_named_with_its_location():
    backend = DiceLinalgOnTensorsBackend(engine="none")
    with pytest.raises(ModuleError, match=r"module\.mlir:3:\d+: error: .*linalg\.frobnicate"):
        backend.compile(BAD_MODULE)
    with pytest.raises(ModuleError, match=r"does not parse:\n.*3:\d+.*linalg\.frobnicate"):
        CpuLinalgBackend().compile(BAD_MODULE)
    with pytest.raises(DiceError, match="linalg-on-tensors only"):
        dice.torch_mlir.compile(Mlp(), [torch.randn(4, 12)], output_type="torch")
    assert issubclass(ModuleError, DiceError) and issubclass(KernelLinkError, DiceError)


def test_accepted_kernels_are_linked_through_their_trampolines(tmp_path):
    """What dice-resolve leaves for an accepted kernel, lowered by dice-lower:
    the inner backend's engine gets the trampolines (built here, linked with
    libDiceRuntime), and the call reaches the kernel library."""
    assert TEST_KERNEL_LIBRARY.exists(), f"no {TEST_KERNEL_LIBRARY}"
    artifacts = tmp_path / "artifacts"
    lowered = tool("dice-opt", f"--dice-lower=artifacts={artifacts}",
                   stdin=KERNEL_MODULE.format(fp=SQUARE_T, library=TEST_KERNEL_LIBRARY))
    backend = DiceLinalgOnTensorsBackend(engine="none")
    artifact = backend.compile_lowered(lowered, artifacts)
    assert artifact.kernels == (SQUARE_T,)
    assert artifact.manifest == artifacts / "manifest.json"

    invoker = backend.load(artifact)
    x = torch.randn(4, 8, generator=generator(7))
    negated, transposed = invoker.forward(x.numpy())
    assert np.array_equal(negated, (-(x * x)).numpy())
    assert np.array_equal(transposed, x.t().numpy())
    assert list(artifacts.glob("dice_kernels_*.so"))


def test_a_kernel_the_manifest_does_not_list_is_an_error(tmp_path):
    artifacts = tmp_path / "artifacts"
    lowered = tool("dice-opt", f"--dice-lower=artifacts={artifacts}",
                   stdin=KERNEL_MODULE.format(fp=SQUARE_T, library=TEST_KERNEL_LIBRARY))
    backend = DiceLinalgOnTensorsBackend(engine="none")
    other = lowered.replace(SQUARE_T, "0123456789abcdef")
    with pytest.raises(KernelLinkError, match="calls dice_k_0123456789abcdef, which "
                                              ".*manifest.json does not list"):
        backend.load(backend.compile_lowered(other, artifacts))
