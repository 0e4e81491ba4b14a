"""dice-curate: pairs of any JSONL shape are read with located errors,
their PyTorch programs become the compiler's kernel requests, their CUDA
programs what the verifier calls (a KernelBench-style entry point renamed
`dice_forward`), and the report keeps exactly the pairs that were timed at
or above the threshold, saying for every other pair why it was dropped.
The CPU run goes through the real dice-verify: without a GPU nothing can
be kept, and the pairs it can judge without one (a build error, an ATen
call) are dropped for that reason."""

import json
import os
import shutil
from pathlib import Path

import pytest

from dice.curate.cli import main as curate_main
from dice.curate.pairs import Fields, PairError, read_pairs, verifier_input
from dice.curate.report import report
from dice.errors import DiceError

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

SCALE_SHIFT = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2.0 + 1.0


def get_inputs():
    return [torch.randn(64, 256)]


def get_init_inputs():
    return []
'''

# A KernelBench-style answer: its own names for the source string and the
# host function, which ModelNew calls through the extension.
KERNEL_BODY = r'''
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

__global__ void scale_shift_kernel(const float* x, float* y, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * 2.0f + 1.0f;
}

torch::Tensor scale_shift_cuda(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.scalar_type() == torch::kFloat32);
  auto y = torch::empty_like(x);
  int64_t n = x.numel();
  scale_shift_kernel<<<(n + 255) / 256, 256, 0, c10::cuda::getCurrentCUDAStream()>>>(
      x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
'''


def kernelbench_program(body, functions='["scale_shift_cuda"]'):
    return f'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

scale_shift_source = """{body}"""

scale_shift_cpp = "torch::Tensor scale_shift_cuda(torch::Tensor x);"

scale_shift = load_inline(name="scale_shift", cpp_sources=scale_shift_cpp,
                          cuda_sources=scale_shift_source, functions={functions})


class ModelNew(nn.Module):
    def forward(self, x):
        return scale_shift.scale_shift_cuda(x)
'''


def write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


# --- reading pairs --------------------------------------------------------

def test_kernelbench_entry_point_is_renamed_dice_forward():
    kind, source = verifier_input(kernelbench_program(KERNEL_BODY))
    assert kind == "cuda_source"
    assert "torch::Tensor dice_forward(torch::Tensor x)" in source
    assert "scale_shift_cuda" not in source
    # The kernel's own name, which merely starts the same, is untouched.
    assert "__global__ void scale_shift_kernel" in source


def test_a_program_with_dice_forward_goes_to_the_verifier_whole():
    program = kernelbench_program(KERNEL_BODY.replace("scale_shift_cuda", "dice_forward"),
                                  '["dice_forward"]')
    assert verifier_input(program) == ("candidate", program)


@pytest.mark.parametrize("program, message", [
    ("def f(:\n", "not Python: line 1"),
    ("x = 1\n", "calls load_inline 0 times"),
    (kernelbench_program(KERNEL_BODY, '["a", "b"]'), "no single function"),
    (kernelbench_program(KERNEL_BODY, '["missing_fn"]'), "does not define 'missing_fn'"),
    (kernelbench_program(KERNEL_BODY).replace("cuda_sources=scale_shift_source",
                                              "cuda_sources=make()"),
     "not a string literal"),
])
def test_programs_without_a_callable_entry_point_say_why(program, message):
    with pytest.raises(DiceError, match=message):
        verifier_input(program)


def test_bad_lines_name_the_file_line_and_field(tmp_path):
    good = {"pytorch_code": SCALE_SHIFT, "cuda_code": "x", "level": 1}
    cases = [
        ("{not json", None, "not JSON"),
        ("[1]", None, "expected a JSON object"),
        ({"cuda_code": "x", "level": 1}, "pytorch_code", "missing"),
        ({**good, "cuda_code": ""}, "cuda_code", "non-empty string"),
        ({**good, "level": 4}, "level", "expected 1, 2 or 3"),
        ({**good, "level": True}, "level", "expected 1, 2 or 3"),
        ({k: v for k, v in good.items() if k != "level"}, "level", "give --level"),
        ({**good, "id": [1]}, "id", "expected a string"),
    ]
    for n, (row, field, message) in enumerate(cases):
        path = write_jsonl(tmp_path / f"bad{n}.jsonl", [good, row])
        with pytest.raises(PairError) as e:
            read_pairs([path])
        assert str(e.value).startswith(f"{path}:2" + (f": field '{field}'" if field else ""))
        assert message in str(e.value)
        pairs, skipped = read_pairs([path], skip_bad=True)
        assert (len(pairs), skipped) == (1, 1)


def test_other_data_sets_name_their_fields(tmp_path):
    path = write_jsonl(tmp_path / "other.jsonl", [
        {"ref": SCALE_SHIFT, "kernel": "k1", "task": "a"},
        {"ref": SCALE_SHIFT, "kernel": "k2", "task": "a"},
        {"ref": SCALE_SHIFT, "kernel": "k3"}])
    pairs, _ = read_pairs([path], Fields(pytorch="ref", cuda="kernel", id="task",
                                         default_level=2))
    assert [p.id for p in pairs] == ["a", "a#2", "other:3"]
    assert [p.cuda_code for p in pairs] == ["k1", "k2", "k3"]
    assert {p.level for p in pairs} == {2}
    assert pairs[0].row == {"ref": SCALE_SHIFT, "kernel": "k1", "task": "a"}


# --- the report -----------------------------------------------------------

def fake_work(tmp_path, verdicts, dropped=()):
    """A work folder as prepare and verify leave it, for the report alone."""
    work = tmp_path / "work"
    work.mkdir()
    lines, out = [], []
    for n, (status, speedup) in enumerate(verdicts):
        pid = f"p{n}"
        lines.append({"id": pid, "level": 1, "source": f"in:{n + 1}", "row": {"id": pid, "x": n},
                      "pytorch_code": "P", "cuda_code": f"C{n}", "fingerprint": f"{n:016x}",
                      "signature": "s", "program": {}})
        verdict = {"status": status, "reason": f"{status} reason", "gpu": "Test GPU",
                   "driver": "1.0"}
        if speedup is not None:
            verdict.update(speedup=speedup, kernel_ms=1.0 / speedup, baseline_ms=1.0)
        out.append({"id": pid, "verdict": verdict})
    for pid, reason in dropped:
        lines.append({"id": pid, "level": 2, "source": "in:9", "row": {}, "stage": "prepare",
                      "dropped": reason, "reason": f"because {reason}"})
    write_jsonl(work / "pairs.jsonl", lines)
    write_jsonl(work / "verdicts.jsonl", out)
    times = {f"{n:016x}": {"eager_ms": 1.0, "inductor_ms": 0.5} for n in range(len(verdicts))}
    (work / "times.json").write_text(json.dumps({"version": 1, "times": times}))
    return work


def test_report_keeps_what_was_timed_at_the_threshold(tmp_path):
    work = fake_work(tmp_path, [("accepted", 3.0), ("accepted", 2.0), ("slow", 1.5),
                                ("incorrect", None), ("deceptive", None)],
                     dropped=[("q", "not compilable")])
    summary = report(work, tmp_path / "out", threshold=2.0)
    assert (summary["pairs"], summary["kept"]) == (6, 2)
    assert summary["by_reason"] == {"kept": 2, "below 2x over eager": 1, "incorrect": 1,
                                    "deceptive": 1, "not compilable": 1}
    assert summary["speedup_of_kept"] == {"median": 2.5, "min": 2.0, "max": 3.0}
    kept = [json.loads(l) for l in (tmp_path / "out/curated.jsonl").read_text().splitlines()]
    assert [r["id"] for r in kept] == ["p0", "p1"]
    # The row as read survives; the measurements are added, CuKe fields set.
    assert kept[0]["x"] == 0 and kept[0]["cuda_code"] == "C0" and kept[0]["level"] == 1
    assert kept[0]["speedup"] == 3.0 and kept[0]["speedup_inductor"] == pytest.approx(1.5)
    md = (tmp_path / "out/report.md").read_text()
    assert "**2 kept**" in md and "Test GPU" in md and "| not compilable | 1 |" in md
    assert "because not compilable" in md
    assert (tmp_path / "out/speedups.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # A lower threshold needs no new verification.
    assert report(work, tmp_path / "out15", threshold=1.4)["kept"] == 3


def test_report_of_an_unfinished_verification_says_so(tmp_path):
    work = fake_work(tmp_path, [("accepted", 3.0)])
    (work / "verdicts.jsonl").write_text("")
    with pytest.raises(DiceError, match="no verdict for pair p0"):
        report(work, tmp_path / "out")
    (work / "verdicts.jsonl").unlink()
    with pytest.raises(DiceError, match="run `dice curate verify`"):
        report(work, tmp_path / "out")


# --- the whole flow on this machine ---------------------------------------

NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"


@pytest.mark.skipif(not Path(NVCC).exists(), reason="no nvcc")
def test_run_drops_every_pair_for_its_reason_without_a_gpu(tmp_path, capsys):
    corpus_row = json.loads((ROOT / "train/data/corpus-val.jsonl").read_text().splitlines()[0])
    aten = KERNEL_BODY.replace("auto y = torch::empty_like(x);", "auto y = x * 2.0 + 1.0;"
                               "\n  return y;\n  auto z = torch::empty_like(x);")
    rows = [
        corpus_row,
        {"id": "kb", "pytorch_code": SCALE_SHIFT, "cuda_code": kernelbench_program(KERNEL_BODY),
         "level": 1},
        {"id": "dup", "pytorch_code": SCALE_SHIFT,
         "cuda_code": kernelbench_program(KERNEL_BODY), "level": 1},
        {"id": "broken", "pytorch_code": SCALE_SHIFT,
         "cuda_code": kernelbench_program(KERNEL_BODY.replace("n) {", "n) {{")), "level": 1},
        {"id": "aten", "pytorch_code": SCALE_SHIFT, "cuda_code": kernelbench_program(aten),
         "level": 1},
        {"id": "raises", "pytorch_code": SCALE_SHIFT.replace("return []", "raise ValueError('no')"),
         "cuda_code": kernelbench_program(KERNEL_BODY), "level": 1},
        {"id": "nothing", "pytorch_code": SCALE_SHIFT, "cuda_code": "print('hello')\n",
         "level": 1},
    ]
    pairs = write_jsonl(tmp_path / "pairs.jsonl", rows)
    out = tmp_path / "out"
    env_cache = tmp_path / "cache"
    os.environ["XDG_CACHE_HOME"] = str(env_cache)
    try:
        assert curate_main(["run", str(pairs), "--out", str(out), "--jobs", "2"]) == 0
    finally:
        del os.environ["XDG_CACHE_HOME"]
    detail = {p["id"]: p for p in json.loads((out / "report.json").read_text())["pairs_detail"]}
    assert detail["dup"]["reason"] == "duplicate" and "the same pair as kb" in detail["dup"]["detail"]
    assert detail["raises"]["reason"] == "not compilable"
    assert "ValueError" in detail["raises"]["detail"]
    assert detail["nothing"]["reason"] == "no entry point"
    assert detail["broken"]["reason"] == "compile_error"
    assert detail["aten"]["reason"] == "deceptive"
    # What builds and passes the analysis cannot be judged without a GPU.
    assert detail[corpus_row["id"]]["reason"] == "unverified"
    assert detail["kb"]["reason"] == "unverified"
    assert (out / "curated.jsonl").read_text() == ""
    work = [json.loads(l) for l in (out / "work/pairs.jsonl").read_text().splitlines()]
    # The kernel request is the compiler's: its signature and reference program.
    assert work[1]["signature"] == "torch::Tensor dice_forward(torch::Tensor x0);"
    assert [t["shape"] for t in work[1]["program"]["inputs"]] == [[64, 256]]
    config = (out / "work/verify.toml").read_text()
    assert 'baseline = "measured_eager"' in config and "min_speedup = 2.0" in config


def test_verify_refuses_a_config_that_sets_what_curate_sets(tmp_path):
    work = fake_work(tmp_path, [])
    bad = tmp_path / "dice.toml"
    bad.write_text('[verifier]\nmin_speedup = 1.0\n')
    assert curate_main(["verify", "--work", str(work), "--config", str(bad)]) == 1


@pytest.mark.skipif(not Path(NVCC).exists(), reason="no nvcc")
def test_a_measured_baseline_needs_the_requests_time(tmp_path):
    """The verifier's measured baselines: a request the times file gives no
    time of the chosen kind stays unverified, saying so; one it times goes
    on to the checks (here a CPU-mode worker), and under "fastest" every
    request does."""
    import subprocess
    from dice.curate.prepare import batch_line, prepare, read_work
    from dice.tools import find_tool
    pairs = write_jsonl(tmp_path / "pairs.jsonl", [
        {"id": "kb", "pytorch_code": SCALE_SHIFT, "cuda_code": kernelbench_program(KERNEL_BODY),
         "level": 1}])
    prepare([pairs], tmp_path / "work")
    line = read_work(tmp_path / "work")[0]
    batch = write_jsonl(tmp_path / "batch.jsonl", [batch_line(line)])

    def verdict(baseline, times):
        (tmp_path / "times.json").write_text(json.dumps({"version": 1, "times": times}))
        (tmp_path / "dice.toml").write_text(
            f'[verifier]\nbaseline = "{baseline}"\n'
            f'baseline_times = "{tmp_path / "times.json"}"\n')
        proc = subprocess.run([find_tool("dice-verify"), "--batch", batch, "--json",
                               "--cpu-run", "--config", tmp_path / "dice.toml",
                               "--cache", tmp_path / "cache"],
                              capture_output=True, text=True, timeout=600)
        return json.loads(proc.stdout.splitlines()[0])

    other = {"00000000000000ff": {"eager_ms": 1.0, "inductor_ms": 1.0}}
    v = verdict("measured_eager", other)
    assert v["status"] == "unverified"
    assert v["reason"] == f"no eager time for this request in {tmp_path / 'times.json'}"
    eager_only = {line["fingerprint"]: {"eager_ms": 1.0}}
    v = verdict("inductor", eager_only)
    assert v["status"] == "unverified" and v["reason"].startswith("no Inductor time")
    v = verdict("measured_eager", eager_only)
    assert "time for this request" not in v["reason"], v
    # The fastest of all: a request with no measured time still has the
    # reference program, which the worker times, and goes on.
    v = verdict("fastest", other)
    assert v["status"] == "unverified" and v["reason"].startswith("CPU smoke run"), v


def test_dice_and_dice_curate_share_the_commands(tmp_path, capsys):
    from dice.cli import main as dice_main
    for run in (lambda a: dice_main(["curate", *a]), curate_main):
        assert run(["report", "--work", str(tmp_path / "none"), "--out", str(tmp_path)]) == 1
        err = capsys.readouterr().err
        assert f"{tmp_path / 'none' / 'pairs.jsonl'}" in err and "dice curate prepare" in err
    with pytest.raises(SystemExit):
        curate_main(["report", "--work", "w", "--out", "o", "--threshold", "0"])
    assert "expected a positive number" in capsys.readouterr().err
