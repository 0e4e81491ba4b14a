"""The export cache: torch-mlir's exports recorded where it is installed and
found, by the graph's structure, where it is not (dice/export_cache.py).

"Where it is not" is this machine with the torch-mlir import made to fail:
the backend then must not reach torch-mlir at all, and must compile from
the cache exactly what it compiled from the export.
"""

import builtins
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import dice.backend
import dice.backend.compile as backend_compile
from build_tree import BUILD_DIR
from dice.export_cache import ExportCache, ExportCacheMiss, _argument, graph_key


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x):
        return F.layer_norm(torch.relu(self.proj(x)) + x, (16,))


class Shifted(nn.Module):
    """A graph that makes tensors on its input's device, one from constants
    of the program (Dynamo puts them into the graph; a buffer would be an
    input of it)."""

    def __init__(self, shift):
        super().__init__()
        self.shift = [shift] * 16

    def forward(self, x):
        shift = torch.tensor(self.shift, device=x.device)
        return torch.tanh(x + shift) * torch.ones(16, device=x.device)


def fresh(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pytest.fixture(autouse=True)
def tools_of_this_build(monkeypatch):
    monkeypatch.setenv("DICE_BUILD_DIR", str(BUILD_DIR))
    monkeypatch.delenv("DICE_EXPORT_CACHE", raising=False)
    dice.backend.clear_reports()
    yield
    torch._dynamo.reset()


def dynamo_graphs(model, *inputs):
    """The graphs (and their example inputs) Dynamo hands a backend."""
    seen = []

    def backend(gm, example_inputs):
        seen.append((gm, example_inputs))
        return gm.forward

    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(model.eval(), backend=backend, dynamic=False)(*inputs)
    return seen


def run_dice(model, inputs, cache):
    """Outputs of the dice backend and eager, and the graph's report."""
    model = model.eval()
    torch._dynamo.reset()
    dice.backend.clear_reports()
    compiled = torch.compile(model, backend="dice", options={
        "fallback": "eager", "engine": "none", "export_cache": str(cache)})
    with torch.no_grad():
        got, expected = compiled(*inputs), model(*inputs)
    (report,) = dice.backend.reports()
    return got, expected, report


def refuse_torch_mlir(mp):
    """torch_mlir cannot be imported, and the backend's exporter fails."""
    real_import = builtins.__import__

    def refusing(name, *args, **kwargs):
        if name.split(".")[0] == "torch_mlir":
            raise ModuleNotFoundError(f"No module named '{name}'")
        return real_import(name, *args, **kwargs)

    def no_export(*args, **kwargs):
        pytest.fail("torch-mlir's export ran although the cache was to be used")

    mp.setattr(builtins, "__import__", refusing)
    mp.setattr(backend_compile, "export_linalg_on_tensors", no_export)


@pytest.fixture
def without_torch_mlir(monkeypatch):
    refuse_torch_mlir(monkeypatch)


def test_the_key_is_the_graphs_structure():
    x = fresh(4, 16)
    (a, a_in), = dynamo_graphs(Block(), x)
    (b, b_in), = dynamo_graphs(Block(), x)
    assert graph_key(a, a_in) == graph_key(b, b_in)       # another module, same graph
    (c, c_in), = dynamo_graphs(Block(), fresh(8, 16))
    assert graph_key(a, a_in) != graph_key(c, c_in)       # another shape
    (d, d_in), = dynamo_graphs(Shifted(0.5), x)
    (e, e_in), = dynamo_graphs(Shifted(0.5), x)
    assert graph_key(d, d_in) == graph_key(e, e_in)
    assert graph_key(a, a_in) != graph_key(d, d_in)       # another program


def test_devices_are_left_out_of_the_key():
    # The same program is recorded on the CPU and compiled on a GPU.
    assert _argument(torch.device("cpu")) == _argument(torch.device("cuda", 0))
    assert _argument((torch.device("cuda"), 2)) == _argument((torch.device("cpu"), 2))
    assert _argument(1.0) != _argument(1.0 + 2 ** -40)    # floats exactly
    assert _argument(torch.float16) != _argument(torch.bfloat16)


def test_recorded_exports_compile_the_same_without_torch_mlir(tmp_path, monkeypatch):
    cache = tmp_path / "exports"
    inputs = (fresh(4, 16),)
    got, expected, recorded = run_dice(Block(), inputs, cache)
    torch.testing.assert_close(got, expected)
    (mlir,) = cache.glob("*.mlir")
    assert "linalg" in mlir.read_text() and (cache / f"{mlir.stem}.json").is_file()
    assert recorded.requests

    real = backend_compile.export_graph
    exports = []
    monkeypatch.setattr(backend_compile, "export_graph",
                        lambda *a: exports.append(real(*a)) or exports[-1])
    with pytest.MonkeyPatch.context() as mp:
        refuse_torch_mlir(mp)
        got, expected, replayed = run_dice(Block(), inputs, cache)
    torch.testing.assert_close(got, expected)
    assert exports == [mlir.read_text()]
    # The pipeline saw the same program: the same requests, by fingerprint.
    assert [r.fingerprint for r in replayed.requests] == \
        [r.fingerprint for r in recorded.requests]
    assert replayed.fallback_reason == "engine 'none': no candidates"


def test_a_miss_takes_the_fallback_with_a_warning_that_says_why(tmp_path, without_torch_mlir):
    cache = tmp_path / "exports"
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got, expected, report = run_dice(Block(), (fresh(4, 16),), cache)
    torch.testing.assert_close(got, expected)
    assert not report.used_dice
    assert "holds no export of this graph" in report.fallback_reason
    assert any("export cache" in str(w.message) for w in seen)


def test_a_recorded_export_is_found_by_key(tmp_path):
    (gm, example), = dynamo_graphs(Shifted(2.0), fresh(4, 16))
    cache = ExportCache(tmp_path)
    key = cache.record(gm, example, "module {}\n")
    assert (tmp_path / f"{key}.mlir").read_text() == "module {}\n"
    assert cache.find(gm, example) == "module {}\n"
    # A constant of the program is part of the key.
    (other, other_example), = dynamo_graphs(Shifted(3.0), fresh(4, 16))
    with pytest.raises(ExportCacheMiss, match="1 recorded"):
        cache.find(other, other_example)


TASK = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, {width})

    def forward(self, x):
        return torch.sigmoid(self.proj(x)) * 2

def get_inputs():
    return [torch.randn(4, 8)]

def get_init_inputs():
    return []
'''


def test_record_exports_records_what_bench_tasks_compiles(tmp_path):
    from dice.bench.record_exports import record_exports
    from dice.bench.tasks import find_tasks, load_task
    folder = tmp_path / "tasks"
    folder.mkdir()
    for name, width in (("a_narrow", 4), ("b_wide", 16)):
        (folder / f"{name}.py").write_text(TASK.format(width=width))
    (folder / "helper.py").write_text("x = 1\n")          # not a task
    cache = tmp_path / "exports"
    recorded = record_exports(folder, cache)
    assert (recorded.tasks, recorded.graphs, recorded.exported) == (2, 2, 2)
    assert not recorded.skipped and len(list(cache.glob("*.mlir"))) == 2
    for task in find_tasks(folder):
        model, inputs = load_task(task, torch.device("cpu"))
        (gm, example), = dynamo_graphs(model, *inputs(0))
        assert "linalg" in ExportCache(cache).find(gm, example)


PROGRAM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x):
        return torch.nn.functional.layer_norm(torch.relu(self.proj(x)) + x, (16,))


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return []
'''


def test_dice_compile_reads_its_export_from_the_cache_without_torch_mlir(
        tmp_path, monkeypatch, capsys):
    import dice.cli
    program = tmp_path / "block.py"
    program.write_text(PROGRAM)
    cache = tmp_path / "exports"
    args = ["compile", str(program), "--engine", "none", "--export-cache", str(cache)]
    assert dice.cli.main(args) == 0
    recorded = capsys.readouterr().out
    assert f"recorded in {cache}" in recorded and len(list(cache.glob("*.mlir"))) == 1

    with monkeypatch.context() as mp:
        refuse_torch_mlir(mp)
        mp.setattr(dice.cli, "export_linalg_on_tensors",
                   lambda *a, **k: pytest.fail("torch-mlir's export ran"))
        assert dice.cli.main(args) == 0
        replayed = capsys.readouterr().out
        assert f"export read from {cache}" in replayed
        # The same requests, reference programs checked against PyTorch alike.
        requests = [line for line in recorded.splitlines() if "k_" in line]
        assert requests and requests == [line for line in replayed.splitlines()
                                         if "k_" in line]

        other = tmp_path / "other"
        assert dice.cli.main([*args[:-1], str(other)]) == 1
        assert "holds no export of this graph" in capsys.readouterr().err
