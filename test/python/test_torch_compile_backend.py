"""`torch.compile(model, backend="dice")` on the CPU: the entry point, the
fallbacks, graph breaks and recompilation, autograd, options, failures that
must not reach the user, and a lowered plan's kernels inside a compiled
graph.

Without a GPU no candidate is accepted, so whole graphs take the fallback;
the graph a plan with kernels becomes is tested on CPU-registered kernels
(the way test_lowered_plan.py runs a lowered program).
"""

import os
import signal
import subprocess
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import dice.backend
from build_tree import BUILD_DIR, SOURCE_ROOT, tool
from dice import runtime as dice_runtime
from dice.backend.baseline import inductor_compiled
from dice.backend.options import parse_options, toml_text
from dice.backend.rebuild import PlanRunner, compile_runner
from dice.errors import DiceError
from dice.pipeline import plan_of

PYTHON = SOURCE_ROOT / ".venv" / "bin" / "python"


class MlpBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(16, 32)
        self.down = nn.Linear(32, 8)

    def forward(self, x):
        return self.down(F.gelu(self.up(x))).softmax(-1)


class ConvBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.norm = nn.BatchNorm2d(8)

    def forward(self, x):
        return F.max_pool2d(torch.relu(self.norm(self.conv(x))), 2)


class Breaking(nn.Module):
    """Two graphs: Dynamo breaks at the print."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        y = torch.tanh(self.proj(x))
        print("between the graphs")
        return (y * 3).sum(-1)


def fresh(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def compiled_matches_eager(model, inputs, **compile_args):
    model = model.eval()
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="dice", **compile_args)
    with torch.no_grad():
        expected = model(*inputs)
        got = compiled(*inputs)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    return compiled


@pytest.fixture(autouse=True)
def tools_of_this_build(monkeypatch):
    monkeypatch.setenv("DICE_BUILD_DIR", str(BUILD_DIR))
    dice.backend.clear_reports()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("fallback", ["eager", "inductor"])
@pytest.mark.parametrize("model,inputs", [
    (MlpBlock(), (fresh(4, 16),)),
    (ConvBlock(), (fresh(2, 3, 8, 8),)),
], ids=["mlp", "conv"])
def test_outputs_are_eagers_when_everything_falls_back(model, inputs, fallback):
    compiled_matches_eager(model, inputs, options={"fallback": fallback, "engine": "none"})
    (report,) = dice.backend.reports()
    assert not report.used_dice and report.fallback == fallback
    # The pipeline ran: the graph's kernel requests are known, each without
    # candidates (engine 'none').
    assert report.requests and all(r.status == "no candidates" for r in report.requests)
    assert report.fallback_reason == "engine 'none': no candidates"


@pytest.mark.shipped_model
def test_the_default_engine_is_the_shipped_model(tmp_path):
    """No engine named: the shipped model writes a candidate for every
    request; without a GPU none can run, so the graph falls back, saying so."""
    fake_nvcc = SOURCE_ROOT / "test" / "Tools" / "dice-opt" / "Inputs" / "fake-nvcc.sh"
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh())
    compiled_matches_eager(model, (fresh(4, 8),),
                           options={"fallback": "eager", "nvcc": str(fake_nvcc),
                                    "sampling.candidates": 1,
                                    "database.path": str(tmp_path / "k.db"),
                                    "artifacts.dir": str(tmp_path / "a")})
    (report,) = dice.backend.reports()
    assert report.requests and not report.used_dice
    assert all(r.status not in ("no candidates", "accepted") for r in report.requests)
    assert report.fallback_reason.startswith("no candidate was accepted")
    # The database files each request's candidate under the shipped model.
    for r in report.requests:
        listed = tool("dice-db", "list", tmp_path / "k.db", "--fingerprint", r.fingerprint,
                      "--model", "dice:default")
        assert len(listed.splitlines()) == 1, listed


def test_engine_none_is_said_once_per_process():
    # Other tests of this process may have said it already: look at a fresh one.
    script = (
        "import warnings, torch\n"
        "warnings.simplefilter('always')\n"
        "m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()).eval()\n"
        "with warnings.catch_warnings(record=True) as seen, torch.no_grad():\n"
        "    for shape in [(2, 4), (3, 4), (5, 4)]:\n"
        "        torch.compile(m, backend='dice', dynamic=False,\n"
        "                      options={'fallback': 'eager', 'engine': 'none'})(\n"
        "            torch.randn(*shape))\n"
        "print(sum('asks for no candidates' in str(w.message) for w in seen))\n")
    out = subprocess.run([str(PYTHON), "-c", script], capture_output=True, text=True,
                         env={**os.environ, "DICE_BUILD_DIR": str(BUILD_DIR)}, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "1"


def test_entry_point_works_without_importing_dice(tmp_path):
    # A script that never imports dice, run where `dice` is installed (the
    # project's venv, editable): Dynamo finds the backend by its entry point.
    script = tmp_path / "user.py"
    script.write_text(
        "import torch\n"
        "assert 'dice' not in __import__('sys').modules\n"
        "assert 'dice' in torch._dynamo.list_backends(exclude_tags=())\n"
        "m = torch.nn.Linear(4, 2).eval()\n"
        "x = torch.randn(3, 4)\n"
        "with torch.no_grad():\n"
        "    y = torch.compile(m, backend='dice', options={'fallback': 'eager', 'engine': 'none'})(x)\n"
        "    assert torch.allclose(y, m(x))\n"
        "print('ok')\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["DICE_BUILD_DIR"] = str(BUILD_DIR)
    out = subprocess.run([str(PYTHON), str(script)], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("ok")


def test_graph_break_and_recompilation():
    model = Breaking().eval()
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="dice", options={"fallback": "eager", "engine": "none"})
    with torch.no_grad():
        for batch in (4, 4, 6, 9):  # a new shape recompiles (then dynamically)
            x = fresh(batch, 8, seed=batch)
            torch.testing.assert_close(compiled(x), model(x))
    graphs = dice.backend.reports()
    # Two graphs per compilation (the break); recompiled for the new shape.
    assert len(graphs) >= 4
    # Recompiled graphs with symbolic sizes go to the fallback, saying why.
    dynamic = [g for g in graphs if g.fallback_reason and "dynamic shapes" in g.fallback_reason]
    assert dynamic and not any(g.used_dice for g in graphs)


def test_static_recompilation_compiles_each_shape_with_dice():
    model = MlpBlock().eval()
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="dice", dynamic=False,
                             options={"fallback": "eager", "engine": "none"})
    with torch.no_grad():
        for batch in (2, 5):
            x = fresh(batch, 16, seed=batch)
            torch.testing.assert_close(compiled(x), model(x))
    graphs = dice.backend.reports()
    assert len(graphs) == 2
    # Each static graph went through the pipeline (its requests are known).
    assert all(g.requests and g.fallback_reason == "engine 'none': no candidates" for g in graphs)


def test_autograd_graphs_fall_back_whole_with_one_warning():
    model = MlpBlock().train()
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="dice", options={"fallback": "eager", "engine": "none"})
    x = fresh(4, 16)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        compiled(x).sum().backward()
        compiled(x).sum().backward()
    said = [w for w in seen if "needs autograd" in str(w.message)]
    assert len(said) <= 1  # once per process (an earlier test may have said it)
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model(x).sum().backward()
    model(x).sum().backward()
    for got, want in zip(grads, [p.grad for p in model.parameters()]):
        torch.testing.assert_close(got, want)
    (report,) = dice.backend.reports()
    assert "needs autograd" in report.fallback_reason and not report.requests


def test_bad_options_are_errors():
    with pytest.raises(DiceError, match="unknown option 'fallbak'"):
        parse_options({"fallbak": "eager"})
    with pytest.raises(DiceError, match="'fallback' is 'cudagraphs'"):
        parse_options({"fallback": "cudagraphs"})
    with pytest.raises(DiceError, match="'granularity' is 'block'"):
        parse_options({"granularity": "block"})
    with pytest.raises(DiceError, match="no section \\[verifer\\]"):
        parse_options({"verifer.trials": 3})
    # Keys are dice-opt's schema's: a misspelt one is caught before any
    # graph compiles, as a dotted option or inside a section's dict.
    with pytest.raises(DiceError, match="no key 'trails' in dice.toml's \\[verifier\\] "
                                        "\\(keys: trials, "):
        parse_options({"verifier.trails": 3})
    with pytest.raises(DiceError, match="option 'sampling': no key 'candidate' "):
        parse_options({"sampling": {"candidate": 2}})
    with pytest.raises(DiceError, match="'jobs' must be a positive integer"):
        parse_options({"jobs": 0})
    with pytest.raises(DiceError, match="no such file"):
        parse_options({"config": "/nonexistent/dice.toml"})
    # Through torch.compile, the mistake reaches the caller: it is theirs.
    torch._dynamo.reset()
    compiled = torch.compile(nn.Linear(2, 2), backend="dice", options={"fallbak": "eager"})
    with pytest.raises(Exception, match="unknown option 'fallbak'"), torch.no_grad():
        compiled(torch.randn(1, 2))


def test_options_parse_where_dice_opt_cannot_run(tmp_path, monkeypatch):
    """Without dice-opt the keys go unchecked here, not into the user's
    program: every graph takes the fallback, saying why."""
    from dice.backend.options import config_keys
    monkeypatch.setenv("DICE_BUILD_DIR", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    config_keys.cache_clear()
    try:
        parsed = parse_options({"verifier.trials": 3, "sampling": {"candidates": 2}})
        assert parsed.toml == {"verifier": {"trials": 3}, "sampling": {"candidates": 2}}
    finally:
        config_keys.cache_clear()


def test_options_map_onto_dice_toml(tmp_path):
    config = tmp_path / "dice.toml"
    config.write_text('[verifier]\ntrials = 7\nrtol = 0.001\n\n[database]\npath = "k.db"\n')
    parsed = parse_options({"config": str(config), "verifier.trials": 3,
                            "sampling": {"candidates": 2, "remasking": "dynamic"},
                            "engine": "replay:x.jsonl"})
    assert parsed.toml["verifier"] == {"trials": 3, "rtol": 0.001}
    assert parsed.toml["sampling"] == {"candidates": 2, "remasking": "dynamic"}
    assert str(parsed.database) == "k.db" and parsed.engine_spec() == "replay:x.jsonl"
    # The fallback's speed and eager's, whichever is faster, is the one to beat.
    assert parsed.baseline == "fastest"
    assert parse_options({"fallback": "eager"}).baseline == "eager"
    # The written file is what dice-opt reads: check it with dice-opt itself.
    written = tmp_path / "written.toml"
    written.write_text(toml_text(parsed.toml))
    tool("dice-opt", f"--dice-config={written}", stdin="module {}\n")


def test_a_bad_dice_toml_value_makes_the_graph_fall_back_with_its_location(tmp_path):
    # The key exists (a misspelt one is the call's error, above); its value
    # is dice-opt's to check, as in a file.
    model = MlpBlock().eval()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        compiled_matches_eager(model, (fresh(4, 16),),
                               options={"fallback": "eager", "engine": "replay:none.jsonl",
                                        "verifier.trials": 0,
                                        "artifacts.dir": str(tmp_path / "a"),
                                        "database.path": str(tmp_path / "k.db")})
    messages = [str(w.message) for w in seen if "takes the fallback" in str(w.message)]
    assert messages and "dice.toml:" in messages[0]
    assert "verifier.trials: must be in [1, 1000], got 0" in messages[0]
    (report,) = dice.backend.reports()
    assert not report.used_dice and "verifier.trials" in report.fallback_reason


def test_a_failing_pipeline_never_reaches_the_user(tmp_path):
    # A replay file that does not exist: dice-opt fails; the model still runs.
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        compiled_matches_eager(ConvBlock(), (fresh(2, 3, 8, 8),),
                               options={"fallback": "eager",
                                        "engine": f"replay:{tmp_path}/missing.jsonl",
                                        "artifacts.dir": str(tmp_path / "a"),
                                        "database.path": str(tmp_path / "k.db")})
    said = [str(w.message) for w in seen if "takes the fallback" in str(w.message)]
    assert len(said) == 1 and "missing.jsonl" in said[0]


def test_a_crash_of_torch_mlir_never_reaches_the_user(tmp_path, monkeypatch):
    # torch-mlir's C++ faulting on a graph: the lowering runs in a forked
    # child, so the fault ends the child, and the graph falls back.
    from torch_mlir import fx

    def faulting_import(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGSEGV)

    monkeypatch.setattr(fx, "export_and_import", faulting_import)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        compiled_matches_eager(ConvBlock(), (fresh(2, 3, 8, 8),),
                               options={"fallback": "eager",
                                        "artifacts.dir": str(tmp_path / "a"),
                                        "database.path": str(tmp_path / "k.db")})
    said = [str(w.message) for w in seen if "takes the fallback" in str(w.message)]
    assert len(said) == 1 and "crashed (SIGSEGV)" in said[0]


# --- a plan with kernels, as a compiled graph -------------------------------

SCALE = "5ca1eadd000000b1"
SPLIT = "0000a11b000000b2"

LOWERABLE = """
dice.kernel @k_{scale} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    verdict #dice.verdict<accepted, kernel_ms = 0.1, baseline_ms = 0.2, speedup = 2.0>
    source "__global__ void scale() {{}}" artifact "{built}/scale.so"
dice.kernel @k_{split} : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
    verdict #dice.verdict<accepted, kernel_ms = 0.1, baseline_ms = 0.3, speedup = 3.0>
    source "__global__ void split() {{}}" artifact "{built}/split.so"
func.func @forward(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {{
  %w = arith.constant dense<[0.5, -1.0, 2.0, 0.25, 3.0, -0.5, 1.5, 0.0]> : tensor<8xf32>
  %r = dice.call @k_{scale}(%x, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %n = linalg.negf ins(%r : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = dice.call @k_{scale}(%n, %w) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %p:2 = dice.call @k_{split}(%m) : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return %p#0, %p#1 : tensor<4x8xf32>, tensor<4x8xf32>
}}
"""

# The kernels, registered for the CPU under the names their libraries would
# register; `CALLS` counts their calls, so a test can see they ran.
CALLS = {"scale": 0, "split": 0, "fail": False}
_LIBRARY = torch.library.Library("dice", "FRAGMENT")
_LIBRARY.define(f"k_{SCALE}(Tensor x, Tensor b) -> Tensor")
_LIBRARY.define(f"k_{SPLIT}(Tensor x) -> Tensor[]")


def _scale(x, b):
    CALLS["scale"] += 1
    if CALLS["fail"]:
        raise RuntimeError("the kernel's launch failed")
    return x * 2 + b


def _split(x):
    CALLS["split"] += 1
    return [x.abs(), x.exp()]


_LIBRARY.impl(f"k_{SCALE}", _scale, "CPU")
_LIBRARY.impl(f"k_{SPLIT}", _split, "CPU")


WEIGHT = torch.tensor([0.5, -1.0, 2.0, 0.25, 3.0, -0.5, 1.5, 0.0])


def plan_reference(x, b):
    m = -(x * 2 + b) * 2 + WEIGHT
    return m.abs(), m.exp()


@pytest.fixture
def lowered_plan(tmp_path):
    built = tmp_path / "built"
    built.mkdir()
    for name in ("scale", "split"):
        (built / f"{name}.so").write_bytes(b"stand-in: the op is registered by the test\n")
    artifacts = tmp_path / "artifacts"
    lowered = tool("dice-opt", f"--dice-lower=artifacts={artifacts}",
                   stdin=LOWERABLE.format(scale=SCALE, split=SPLIT, built=built))
    plan = plan_of(lowered)
    runtime = dice_runtime.load(artifacts / "manifest.json")
    return plan, runtime


@pytest.mark.parametrize("fallback", ["eager", "inductor"])
def test_plan_kernels_run_inside_the_compiled_graph(lowered_plan, fallback):
    plan, runtime = lowered_plan
    kinds = [s["kind"] for s in plan["steps"]]
    assert kinds.count("kernel") == 3 and "weight" in kinds
    x, b = fresh(4, 8, seed=1), fresh(8, seed=2)
    runner = PlanRunner(plan, runtime, "cpu")
    compiled = compile_runner(runner, [x, b], fallback)
    before = dict(CALLS)
    x2, b2 = fresh(4, 8, seed=3), fresh(8, seed=4)
    got = compiled(x2, b2)
    for g, want in zip(got, plan_reference(x2, b2), strict=True):
        torch.testing.assert_close(g, want)
    assert CALLS["scale"] == before["scale"] + 2 and CALLS["split"] == before["split"] + 1


def test_a_kernel_that_fails_when_run_falls_back_once(lowered_plan):
    plan, runtime = lowered_plan
    x, b = fresh(4, 8, seed=1), fresh(8, seed=2)
    runner = PlanRunner(plan, runtime, "cpu")
    report = dice.backend.GraphReport("graph under test", used_dice=True)

    class Graph(torch.nn.Module):  # what the fallback runs: the same function
        def forward(self, x, b):
            return plan_reference(x, b)

    guarded = dice.backend.GuardedGraph(runner, torch.fx.symbolic_trace(Graph()), report)
    CALLS["fail"] = True
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            first = guarded(x, b)
            calls = CALLS["scale"]
            second = guarded(x, b)
    finally:
        CALLS["fail"] = False
    for got in (first, second):
        for g, want in zip(got, plan_reference(x, b), strict=True):
            torch.testing.assert_close(g, want)
    assert CALLS["scale"] == calls  # the kernel is not tried again
    said = [str(w.message) for w in seen if "runs eagerly from now on" in str(w.message)]
    assert len(said) == 1 and "the kernel's launch failed" in said[0]
    assert "failed when run" in report.fallback_reason


def sourceless_symbols():
    """Symbols of the running Dynamo compile's shape env that no input of
    the user's frame is the source of."""
    env = torch._guards.TracingContext.get().fake_mode.shape_env
    return sorted(str(s) for s in env.backed_var_to_val if not env.var_to_sources.get(s))


def test_dices_own_compiles_leave_dynamos_shape_env_alone(lowered_plan):
    # On a GPU, Inductor guards the symbols of what it compiles (32-bit
    # indexing of a matmul template); symbols that dice's own compiles left
    # in Dynamo's shape env have no source in the user's frame, and Dynamo's
    # guard building raised into the user's program after the backend had
    # returned. On the CPU the leak shows before any guard is built.
    plan, runtime = lowered_plan
    seen = {}

    class Linear(nn.Module):  # a matmul partition, as a request's Model
        def forward(self, x, w):
            return x @ w

    def backend(gm, example_inputs):
        before = sourceless_symbols()
        x, b = fresh(4, 8, seed=1), fresh(8, seed=2)
        rebuilt = compile_runner(PlanRunner(plan, runtime, "cpu"), [x, b], "inductor")
        partition = inductor_compiled(Linear(), [fresh(8, 16), fresh(16, 4)], "cpu")
        seen["results"] = rebuilt(x, b), partition(fresh(8, 16, seed=3), fresh(16, 4, seed=4))
        seen["leaked"] = [s for s in sourceless_symbols() if s not in before]
        return gm.forward

    torch._dynamo.reset()
    model = MlpBlock().eval()
    x = fresh(4, 16)
    with torch.no_grad():
        got = torch.compile(model, backend=backend)(x)
        torch.testing.assert_close(got, model(x))
    assert seen["leaked"] == []
    rebuilt, product = seen["results"]
    for g, want in zip(rebuilt, plan_reference(fresh(4, 8, seed=1), fresh(8, seed=2)),
                       strict=True):
        torch.testing.assert_close(g, want)
    torch.testing.assert_close(product, fresh(8, 16, seed=3) @ fresh(16, 4, seed=4))


def test_an_inductor_failure_in_the_fallback_runs_the_graph_eagerly(monkeypatch):
    import torch._inductor.compile_fx as inductor

    def broken(*args, **kwargs):
        raise RuntimeError("Inductor broke")

    monkeypatch.setattr(inductor, "compile_fx", broken)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        compiled_matches_eager(MlpBlock(), (fresh(4, 16),),
                               options={"fallback": "inductor", "engine": "none"})
    said = [str(w.message) for w in seen if "Inductor did not compile" in str(w.message)]
    assert len(said) == 1 and "Inductor broke" in said[0]


def test_replayed_candidates_are_verified_and_reported(tmp_path):
    # First compile: the requests' fingerprints, as the backend forms them.
    model = MlpBlock().eval()
    compiled_matches_eager(model, (fresh(4, 16),), options={"fallback": "eager", "engine": "none"})
    (first,) = dice.backend.reports()
    fingerprints = [r.fingerprint for r in first.requests]
    # A candidate for each that cannot be a kernel (no dice_forward): the
    # verifier's verdict, not a kernel, comes back, and the graph falls back.
    replay = tmp_path / "kernels.jsonl"
    replay.write_text("".join(
        f'{{"fingerprint": "{fp}", "cuda_source": "__global__ void k() {{}}"}}\n'
        for fp in fingerprints))
    dice.backend.clear_reports()
    compiled_matches_eager(model, (fresh(4, 16),),
                           options={"fallback": "eager", "engine": f"replay:{replay}",
                                    "database.path": str(tmp_path / "kernels.db"),
                                    "artifacts.dir": str(tmp_path / "artifacts")})
    (second,) = dice.backend.reports()
    assert [r.fingerprint for r in second.requests] == fingerprints
    assert all(r.status == "compile_error" and not r.used for r in second.requests)
    assert second.fallback_reason.startswith("no candidate was accepted")
    assert f"{len(fingerprints)} compile_error" in second.fallback_reason
    assert second.verify_seconds is not None and not second.used_dice


def test_the_summary_counts_what_the_reports_hold():
    from dice.backend import GraphReport, RequestReport, summary
    kept = GraphReport("graph 0", used_dice=True, compile_seconds=12.0, verify_seconds=9.5,
                       dice_graph_ms=0.5, inductor_graph_ms=0.75, requests=[
                           RequestReport("a" * 16, "linear gelu", "accepted", used=True,
                                         speedup=1.5, kernel_ms=0.2, eager_ms=0.6,
                                         inductor_ms=0.3),
                           RequestReport("b" * 16, "softmax", "slow")])
    lost = GraphReport("graph 1", compile_seconds=3.0, dice_graph_ms=0.4,
                       inductor_graph_ms=0.2, fallback_reason="with dice's kernels ...",
                       requests=[RequestReport("c" * 16, "relu", "accepted", speedup=1.1)])
    none = [GraphReport(f"graph {i}", compile_seconds=0.5,
                        fallback_reason="no candidate was accepted (1 slow)") for i in (2, 3)]
    failed = GraphReport("graph 4", fallback_reason="ToolFailed: dice-opt exited with 1:\n"
                         "note: loading\nm.mlir:3:5: error: no model\nmore")
    lines = summary([kept, lost, *none, failed]).splitlines()
    assert lines[0] == ("dice: 5 graphs, 1 with dice kernels; 3 kernel requests "
                        "(2 accepted, 1 slow), 1 kernels running")
    assert lines[1].strip() == "compiling took 16.0 s, 9.5 s of it generating and verifying"
    assert "graph 0: 0.5000 ms with dice's kernels, 0.7500 ms as Inductor alone (1.50x): " \
           "dice's runs" in lines[2]
    assert "k_aaaaaaaaaaaa linear gelu" in lines[3] and "eager 3.00x, Inductor 1.50x" in lines[3]
    assert "(0.50x): Inductor's runs" in lines[4]
    # The most frequent reason first; a tool's failure by its error line.
    assert [line.strip() for line in lines[-3:]] == [
        "2 graphs on the fallback: no candidate was accepted (1 slow)",
        "1 graph on the fallback: with dice's kernels ...",
        "1 graph on the fallback: ToolFailed: dice-opt exited with 1: "
        "m.mlir:3:5: error: no model"]


def test_the_summary_after_a_real_compile():
    compiled_matches_eager(MlpBlock(), (fresh(4, 16),),
                           options={"fallback": "eager", "engine": "none"})
    text = dice.backend.summary()
    assert text.startswith("dice: 1 graphs, 0 with dice kernels; ")
    assert "1 graph on the fallback: engine 'none': no candidates" in text
