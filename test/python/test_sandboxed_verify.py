"""dice-verify contains candidates that crash or hang on the host.

Without a GPU, `--cpu-run` still sends built candidates to sandboxed
CPU-mode workers: host code runs, kernels do not. A candidate that
segfaults, aborts or never returns must cost only its own verdict
(`crashed`, naming the signal or the deadline), its worker is replaced, and
the candidates after it are still judged.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from build_tree import BUILD_DIR, SOURCE_ROOT

DICE_VERIFY = BUILD_DIR / "bin" / "dice-verify"
WORKER = BUILD_DIR / "bin" / "dice-verify-worker"
CORPUS = SOURCE_ROOT / "test" / "verifier" / "corpus"
NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"

pytestmark = [
    pytest.mark.skipif(not DICE_VERIFY.exists() or not WORKER.exists(),
                       reason="dice-verify or dice-verify-worker is not built"),
    pytest.mark.skipif(not Path(NVCC).exists(), reason="no nvcc"),
    pytest.mark.skipif(Path("/proc/driver/nvidia/version").exists(),
                       reason="a GPU machine runs the real checks instead"),
]

SIGNATURE = "torch::Tensor dice_forward(torch::Tensor x0);"
PROGRAM = {"inputs": [{"shape": [64, 64], "dtype": "float32"}], "ops": [], "outputs": [0]}

HANG = """
#include <torch/extension.h>
__global__ void copy_kernel(const float *in, float *out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}
// Never returns to the caller.
torch::Tensor dice_forward(torch::Tensor x0) {
  volatile bool forever = true;
  while (forever) {}
  auto out = torch::empty_like(x0);
  copy_kernel<<<1, 256>>>(x0.data_ptr<float>(), out.data_ptr<float>(), x0.numel());
  return out;
}
"""


def entry(name, fingerprint, source):
    return {"name": name, "fingerprint": fingerprint, "signature": SIGNATURE,
            "cuda_source": source, "program": PROGRAM}


def test_host_crashes_and_hangs_cost_one_verdict_each(tmp_path):
    batch = tmp_path / "batch.jsonl"
    rows = [entry("segfault", "f0000000000000a1", (CORPUS / "fault_host_segfault.cu").read_text()),
            entry("hang", "f0000000000000a2", HANG),
            entry("abort", "f0000000000000a3", (CORPUS / "fault_abort.cu").read_text()),
            entry("relu", "f0000000000000a4", (CORPUS / "honest_relu_dispatch.cu").read_text())]
    batch.write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = tmp_path / "dice.toml"
    config.write_text("[verifier]\ntimeout_s = 10\n")
    cache = Path(os.environ.get("DICE_TEST_KERNEL_CACHE", BUILD_DIR / "test" / "kernel-cache"))
    proc = subprocess.run([str(DICE_VERIFY), "--batch", str(batch), "--cpu-run", "--json",
                           "--jobs", "2", "--cache", str(cache), "--config", str(config),
                           "--no-analysis"],
                          capture_output=True, text=True, timeout=1800)
    verdicts = {r["name"]: json.loads(line) for r, line in
                zip(rows, [l for l in proc.stdout.splitlines() if l.startswith("{")])}
    assert len(verdicts) == 4, proc.stderr
    assert proc.returncode == 1, "crashed candidates must fail the run"
    assert "no CUDA device" in proc.stderr

    assert verdicts["segfault"]["status"] == "crashed"
    assert "SIGSEGV" in verdicts["segfault"]["reason"]
    assert verdicts["abort"]["status"] == "crashed"
    assert "SIGABRT" in verdicts["abort"]["reason"]
    assert verdicts["hang"]["status"] == "crashed"
    assert "did not finish within 10 s" in verdicts["hang"]["reason"]
    # After three dead workers the next candidate still runs, in a fresh one,
    # and its host code reaches the kernel launch.
    assert verdicts["relu"]["status"] == "unverified"
    assert "CPU smoke run" in verdicts["relu"]["reason"]
    for v in verdicts.values():
        assert v["compile_ms"] is not None and v["kernel_ms"] is None
