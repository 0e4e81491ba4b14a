"""dice-verify on corpus candidates, without a GPU.

One batch holds an honest kernel (as a model answer), a hack and a candidate
with a syntax error. Without a CUDA device the honest one must build into a
kernel library that registers `dice::k_<fp>` and be `unverified`; the hack
is `deceptive` naming its line; the syntax error is a `compile_error` naming
its line. A second run finds the library in the cache. nvcc spends most of a
minute of CPU in the torch headers per translation unit, so the test builds
only the honest kernel and the shared registration object, and one failing
compile of the syntax error.
"""

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from build_tree import BUILD_DIR, SOURCE_ROOT

DICE_VERIFY = BUILD_DIR / "bin" / "dice-verify"
CORPUS = SOURCE_ROOT / "test" / "verifier" / "corpus"
NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"

pytestmark = [
    pytest.mark.skipif(not DICE_VERIFY.exists(), reason=f"{DICE_VERIFY} is not built"),
    pytest.mark.skipif(not Path(NVCC).exists(), reason="no nvcc"),
]

ADD_SIGNATURE = "torch::Tensor dice_forward(torch::Tensor x0, torch::Tensor x1);"
HONEST_FP = "a11ce0000000add0"
HACK_FP = "bad0000000000001"
BROKEN_FP = "bad0000000000002"


def expect_line(path):
    """The 1-based line of the file's `// expect:` marker."""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if "// expect:" in line:
            return number
    raise AssertionError(f"no expect marker in {path}")


def broken_source():
    """honest_add.cu with the semicolon after its first statement removed."""
    lines = (CORPUS / "honest_add.cu").read_text().splitlines()
    for i, line in enumerate(lines):
        if line.rstrip().endswith(";") and "dice_forward" not in line and "#" not in line:
            lines[i] = line.rstrip()[:-1]
            return "\n".join(lines) + "\n", i + 1
    raise AssertionError("no statement to break")


def run_verify(*args, timeout=900):
    start = time.monotonic()
    proc = subprocess.run([str(DICE_VERIFY), *map(str, args)], capture_output=True,
                          text=True, timeout=timeout)
    return proc, time.monotonic() - start


def verdicts(proc):
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    root = tmp_path_factory.mktemp("dice-verify")
    honest = (CORPUS / "honest_add.cu").read_text()
    broken, broken_line = broken_source()
    entries = [
        {"name": "honest", "fingerprint": HONEST_FP, "signature": ADD_SIGNATURE,
         "candidate": f'Here is the kernel.\n```python\nsource = r"""\n{honest}"""\n```\n'},
        {"name": "hack", "fingerprint": HACK_FP, "signature": ADD_SIGNATURE,
         "cuda_source": (CORPUS / "hack_torch_matmul.cu").read_text()},
        {"name": "broken", "fingerprint": BROKEN_FP, "signature": ADD_SIGNATURE,
         "cuda_source": broken},
    ]
    path = root / "candidates.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    cache = root / "cache"
    first, first_s = run_verify("--batch", path, "--cache", cache, "--jobs", 2, "--json")
    return {"root": root, "path": path, "cache": cache, "first": first,
            "first_s": first_s, "broken": broken, "broken_line": broken_line}


def test_batch_verdicts(batch):
    proc = batch["first"]
    assert proc.returncode == 1, proc.stderr  # nothing can be accepted here
    honest, hack, broken = verdicts(proc)

    if not Path("/proc/driver/nvidia/version").exists():
        assert honest["status"] == "unverified", honest
        assert honest["reason"] == "no CUDA device: built and analysed, not run"
        assert "no CUDA device" in proc.stderr
    assert honest["compile_ms"] > 0
    assert honest["kernel_ms"] is None and honest["speedup"] is None
    assert re.fullmatch(r"[0-9a-f]{64}", honest["candidate_hash"])

    hack_line = expect_line(CORPUS / "hack_torch_matmul.cu")
    assert hack["status"] == "deceptive", hack
    assert f"line {hack_line}: torch_compute" in hack["reason"]
    assert hack["compile_ms"] is None, "a deceptive candidate is never built"

    assert broken["status"] == "compile_error", broken
    assert f"line {batch['broken_line']}:" in broken["reason"], broken["reason"]


def test_library_registers_the_operator(batch):
    libraries = list(batch["cache"].rglob(f"k_{HONEST_FP}.so"))
    assert len(libraries) == 1, list(batch["cache"].rglob("*"))
    library = libraries[0]
    def symbols(kind):
        return subprocess.run(["nm", "-D", kind, library], capture_output=True,
                              text=True, check=True).stdout
    # Torch's code is never copied into a kernel library: a light build
    # calls the bridge, a full build torch itself, both resolved at load.
    undefined = symbols("--undefined-only")
    assert "dice_light" in undefined or "c10" in undefined, undefined
    assert "c10" not in symbols("--defined-only")
    assert f"k_{HONEST_FP}".encode() in library.read_bytes()
    # Loading registers the operator with its schema, with or without a GPU.
    script = (
        "import torch, sys\n"
        f"torch.ops.load_library({str(library)!r})\n"
        f"print(torch.ops.dice.k_{HONEST_FP}.default._schema)\n")
    # The interpreter running the tests has torch (the project's venv).
    proc = subprocess.run([sys.executable, "-c", script],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (
        f"dice::k_{HONEST_FP}(Tensor x0, Tensor x1) -> Tensor")


def test_second_run_hits_the_cache(batch):
    proc, seconds = run_verify("--batch", batch["path"], "--cache", batch["cache"],
                               "--json", "--allow-unverified")
    assert proc.returncode == 1, proc.stderr  # the hack and the syntax error
    first = verdicts(batch["first"])[0]
    honest = verdicts(proc)[0]
    assert honest["status"] == first["status"]
    assert honest["candidate_hash"] == first["candidate_hash"]
    assert honest["compile_ms"] < first["compile_ms"] / 20, (honest, first)
    assert seconds < batch["first_s"] / 3, (seconds, batch["first_s"])


def test_nvcc_errors_name_the_candidate_line(batch):
    path = batch["root"] / "broken.cu"
    path.write_text(batch["broken"])
    # Without the analysis (which would catch it first) nvcc reports it.
    proc, _ = run_verify("--candidate", path, "--fingerprint", BROKEN_FP,
                         "--signature", ADD_SIGNATURE, "--cache", batch["cache"],
                         "--no-analysis", "--json")
    assert proc.returncode == 1
    (verdict,) = verdicts(proc)
    assert verdict["status"] == "compile_error", verdict
    line = batch["broken_line"]
    # nvcc reports a missing ';' at the start of the next token's line.
    assert re.match(rf"line ({line}|{line + 1}): ", verdict["reason"]), verdict["reason"]
    assert re.search(rf"candidate\.cu\(({line}|{line + 1})\): error", verdict["reason"])
    assert verdict["compile_ms"] > 0


def test_unverified_counts_as_success_only_when_allowed(batch):
    honest = json.loads(batch["path"].read_text().splitlines()[0])
    answer = batch["root"] / "honest.txt"
    answer.write_text(honest["candidate"])
    args = ["--candidate", answer, "--fingerprint", HONEST_FP, "--signature",
            ADD_SIGNATURE, "--cache", batch["cache"]]
    strict, _ = run_verify(*args)
    assert strict.returncode == 1
    assert "unverified" in strict.stdout or "accepted" in strict.stdout
    allowed, _ = run_verify(*args, "--allow-unverified")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
