"""dice-verify-worker's protocol and containment, without a GPU.

The worker runs with `--device cpu`: inputs and the reference program on the
CPU, the candidate's CUDA kernel called directly, inputs in memory the host
cannot read (as device memory is not). Two corpus candidates are built into
kernel libraries with dice-verify (one signature, so one registration
object): fault_host_segfault.cu, which dereferences an input on the host,
must kill the worker by SIGSEGV before it replies; fault_abort.cu returns
normally on 16 elements (`unverified`, a CPU smoke run) and aborts the
worker on more. Malformed requests get error replies, a missing library
the documented `compile_error`. A second light library registering the same
operator runs in the same worker (the first is unloaded, and its registration
with it); when the first left a thread running, it stays loaded and the
second gets a retry reply. The libraries are cached in the build directory
(content addressed), since each nvcc build costs most of a minute of CPU.
"""

import json
import os
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from build_tree import BUILD_DIR, SOURCE_ROOT

WORKER = BUILD_DIR / "bin" / "dice-verify-worker"
DICE_VERIFY = BUILD_DIR / "bin" / "dice-verify"
CORPUS = SOURCE_ROOT / "test" / "verifier" / "corpus"
NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"

pytestmark = [
    pytest.mark.skipif(not WORKER.exists(), reason=f"{WORKER} is not built"),
    pytest.mark.skipif(not DICE_VERIFY.exists(), reason=f"{DICE_VERIFY} is not built"),
    pytest.mark.skipif(not Path(NVCC).exists(), reason="no nvcc"),
]

SIGNATURE = "torch::Tensor dice_forward(torch::Tensor x0);"
SEGFAULT_FP = "5e9f000000000001"
ABORT_FP = "ab0f000000000001"
SLEEPER_FP = "51ee000000000001"
# Returns at once and leaves a host thread running in the worker.
SLEEPER = """#include <torch/extension.h>
#include <chrono>
#include <thread>
torch::Tensor dice_forward(torch::Tensor x0) {
  std::thread([] { std::this_thread::sleep_for(std::chrono::hours(1)); }).detach();
  return torch::empty_like(x0);
}
"""


def identity_program(shape):
    """x0 -> x0 * 1.0: one float32 input and one result of the same shape."""
    tensor = {"shape": list(shape), "dtype": "float32"}
    return {"inputs": [tensor],
            "ops": [{"fn": "scalar", "args": [], "value": 1.0,
                     "type": {"shape": [], "dtype": "float32"}},
                    {"fn": "mul", "args": [0, 1], "type": tensor}],
            "outputs": [2]}


@pytest.fixture(scope="module")
def libraries():
    """fingerprint -> kernel library, built (or found) by dice-verify."""
    cache = BUILD_DIR / "test" / "verify-worker-cache"
    batch = cache / "candidates.jsonl"
    cache.mkdir(parents=True, exist_ok=True)
    entries = [{"name": "segfault", "fingerprint": SEGFAULT_FP, "signature": SIGNATURE,
                "cuda_source": (CORPUS / "fault_host_segfault.cu").read_text()},
               {"name": "abort", "fingerprint": ABORT_FP, "signature": SIGNATURE,
                "cuda_source": (CORPUS / "fault_abort.cu").read_text()},
               {"name": "sleeper", "fingerprint": SLEEPER_FP, "signature": SIGNATURE,
                "cuda_source": SLEEPER}]
    batch.write_text("".join(json.dumps(e) + "\n" for e in entries))
    proc = subprocess.run([str(DICE_VERIFY), "--batch", str(batch), "--cache", str(cache),
                           "--jobs", "2", "--no-analysis", "--json", "--allow-unverified"],
                          capture_output=True, text=True, timeout=1200)
    verdicts = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert len(verdicts) == 3, proc.stderr
    for verdict in verdicts:
        assert verdict["status"] in ("unverified", "accepted"), (verdict, proc.stderr)
    found = {}
    for fp, verdict in zip((SEGFAULT_FP, ABORT_FP, SLEEPER_FP), verdicts):
        # The newest build of this source (the cache keeps older toolchains').
        candidates = sorted(cache.rglob(f"k_{fp}.so"), key=lambda p: p.stat().st_mtime)
        assert candidates, f"no library for {fp}"
        found[fp] = candidates[-1]
    return found


class Worker:
    """A dice-verify-worker with fd 3 as its reply pipe and a log file."""

    def __init__(self, scratch, device="cpu"):
        self.log = scratch / "worker.log"
        read_end, write_end = os.pipe()
        with open(self.log, "wb") as log:
            # fd 3 in the child is the pipe's write end; the parent keeps no
            # copy, so the pipe ends when the worker does.
            self.proc = subprocess.Popen(
                [str(WORKER), "--scratch", str(scratch), "--device", device],
                stdin=subprocess.PIPE, stdout=log, stderr=log, close_fds=False,
                preexec_fn=lambda: os.dup2(write_end, 3))
        os.close(write_end)
        self.replies = os.fdopen(read_end, "rb")
        self.buffer = b""

    def send(self, request):
        line = request if isinstance(request, str) else json.dumps(request)
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def reply(self, timeout=180):
        """The next reply, or None when the worker closed fd 3 (it died)."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            assert left > 0, f"no reply within {timeout} s; log:\n{self.log.read_text()}"
            ready, _, _ = select.select([self.replies], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.replies.fileno(), 65536)
            if not chunk:
                assert not self.buffer, f"partial reply {self.buffer!r}"
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.replies.close()


@pytest.fixture
def worker(tmp_path):
    started = Worker(tmp_path)
    yield started
    started.close()


def request(id, library, fingerprint, shape=(4, 4), **extra):
    return {"id": id, "library": str(library), "operator": f"k_{fingerprint}",
            "fingerprint": fingerprint, "candidate_hash": "0" * 64,
            "program": identity_program(shape), "trials": 2, "seed": 7, **extra}


def test_ready_line(worker):
    ready = worker.reply()
    assert ready["ready"] is True, ready
    assert ready["pid"] == worker.proc.pid
    assert ready["device"] == "cpu"
    assert ready["gpu"] == "" and ready["driver"] == ""
    # Nothing was measured on the CPU, and the message says so.
    assert ready["bandwidth_gbs"] is None and ready["peak_tflops"] is None
    assert "CPU" in ready["tracing"]
    # The warm-up program ran every step of a check on the CPU too.
    assert ready["warm_up"] == "done"


def test_malformed_requests_get_error_replies(worker, tmp_path):
    assert worker.reply()["ready"]
    good = request(1, tmp_path / "k_00.so", "00")
    cases = [
        ("{not json", None, "not a JSON object"),
        ("[1, 2]", None, "not a JSON object"),
        ({**good, "id": 2, "bogus": True}, 2, 'unknown request key "bogus"'),
        ({k: v for k, v in good.items() if k != "program"} | {"id": 3}, 3, '"program"'),
        ({**good, "id": 4, "trials": 0}, 4, '"trials"'),
        ({**good, "id": 5, "atol": "small"}, 5, '"atol"'),
        ({**good, "id": 6, "library": "relative/k_00.so"}, 6, "absolute path"),
        ({**good, "id": 7, "operator": "k_11"}, 7, "k_<fingerprint>"),
        ({**good, "id": 8, "program": {"inputs": [], "ops": [{"fn": "nope"}],
                                       "outputs": []}}, 8, "program:"),
        ({**good, "id": "nine"}, None, '"id" must be an integer'),
        ({**good, "id": 10, "baseline_measure": "device_time"}, 10, 'needs "baseline_ms"'),
        ({**good, "id": 11, "baseline_ms": 0.1, "baseline_measure": "wall"}, 11,
         '"baseline_measure" must be'),
        ({**good, "id": 12, "comparison": "loose"}, 12,
         '"comparison" must be "scaled" or "kernelbench"'),
        ({**good, "id": 13, "kernelbench_tolerance": -1}, 13, '"kernelbench_tolerance"'),
        ({**good, "id": 14, "baselines": [0.1]}, 14, '"baselines" must be an object'),
        ({**good, "id": 15, "baselines": {"reference": 0.1}}, 15, 'other than "reference"'),
        ({**good, "id": 16, "baselines": {"inductor": 0}}, 16, "positive time"),
        ({**good, "id": 17, "time_reference": False}, 17, "needs a baseline time"),
        ({**good, "id": 18, "time_reference": "no"}, 18, '"time_reference" must be true or false'),
    ]
    for sent, id, message in cases:
        worker.send(sent)
        reply = worker.reply()
        assert reply["id"] == id, reply
        assert message in reply["error"], reply
        assert reply["exit"] is False and "verdict" not in reply
    # Still serving: a well-formed request gets a verdict.
    worker.send(good)
    assert worker.reply()["verdict"]["status"] == "compile_error"


def test_missing_library_is_a_compile_error(worker, tmp_path):
    assert worker.reply()["ready"]
    missing = tmp_path / "nowhere" / "k_00c0ffee.so"
    worker.send(request(11, missing, "00c0ffee"))
    reply = worker.reply()
    assert reply["id"] == 11 and reply["exit"] is False
    verdict = reply["verdict"]
    assert verdict["status"] == "compile_error"
    assert str(missing) in verdict["reason"] and "cannot be loaded" in verdict["reason"]
    assert verdict["fingerprint"] == "00c0ffee" and verdict["candidate_hash"] == "0" * 64
    assert verdict["kernel_ms"] is None and verdict["speedup"] is None


def test_returning_candidate_is_unverified(worker, libraries):
    assert worker.reply()["ready"]
    # fault_abort.cu returns normally on up to 16 elements.
    worker.send(request(21, libraries[ABORT_FP], ABORT_FP, shape=(4, 4)))
    reply = worker.reply()
    assert reply["id"] == 21 and reply["exit"] is False, reply
    verdict = reply["verdict"]
    assert verdict["status"] == "unverified", verdict
    assert verdict["reason"].startswith("CPU smoke run: the call returned 1 tensor"), verdict
    assert "nothing was checked" in verdict["reason"]
    assert verdict["gpu"] == "" and verdict["trials"] is None
    assert reply["details"]["results"] == [{"shape": [4, 4], "dtype": "float32"}]
    assert reply["details"]["reference"] == "ran"
    # The same library again: loaded once, still served.
    worker.send(request(22, libraries[ABORT_FP], ABORT_FP, shape=(2, 8)))
    assert worker.reply()["verdict"]["status"] == "unverified"


def symbolic_identity_program(example):
    """identity_program with a dynamic first dimension (size symbol s0)."""
    program = identity_program(("s0", 4))
    program["symbols"] = [{"example": example}]
    return program


def test_dynamic_program_is_called_at_its_examples_and_at_other_sizes(worker, libraries):
    assert worker.reply()["ready"]
    # Example 2 x 4: 8 elements; the other sizes are (2 * 2 + 1) x 4 = 20.
    # fault_abort.cu returns on up to 16 elements and aborts on more: only a
    # call at the other sizes kills the worker.
    sent = request(51, libraries[ABORT_FP], ABORT_FP, program=symbolic_identity_program(2))
    worker.send(sent)
    assert worker.reply() is None, "the worker was not called at the other sizes"
    assert worker.proc.wait(timeout=60) == -signal.SIGABRT, worker.log.read_text()


def test_dynamic_program_at_sizes_the_candidate_handles(worker, libraries):
    assert worker.reply()["ready"]
    # Example 1 x 4; the other sizes 3 x 4 = 12 elements: both returned.
    worker.send(request(52, libraries[ABORT_FP], ABORT_FP, program=symbolic_identity_program(1)))
    reply = worker.reply()
    assert reply["id"] == 52 and reply["exit"] is False, reply
    assert reply["details"]["sizes"] == {"example": [1], "other": [3]}
    assert reply["details"]["results"] == [{"shape": [1, 4], "dtype": "float32"}]
    assert reply["details"]["results_at_other_sizes"] == [[3, 4]]
    assert "at sizes other than the examples" in reply["verdict"]["reason"]


def test_host_segfault_kills_the_worker_without_a_reply(worker, libraries):
    assert worker.reply()["ready"]
    worker.send(request(31, libraries[SEGFAULT_FP], SEGFAULT_FP, shape=(64, 64)))
    assert worker.reply() is None, "the worker replied instead of faulting"
    assert worker.proc.wait(timeout=60) == -signal.SIGSEGV, worker.log.read_text()


def test_abort_kills_the_worker_without_a_reply(worker, libraries):
    assert worker.reply()["ready"]
    worker.send(request(41, libraries[ABORT_FP], ABORT_FP, shape=(64, 64)))
    assert worker.reply() is None
    assert worker.proc.wait(timeout=60) == -signal.SIGABRT, worker.log.read_text()


def load_two_libraries_of_one_operator(worker, libraries, fingerprint, first_id, tmp_path):
    """Checks the library of `fingerprint`, then sends a copy of it (another
    library registering the same operator) and returns the reply to that."""
    assert worker.reply()["ready"]
    worker.send(request(first_id, libraries[fingerprint], fingerprint))
    assert worker.reply()["verdict"]["status"] == "unverified"
    other = tmp_path / "other" / f"k_{fingerprint}.so"
    other.parent.mkdir()
    shutil.copy(libraries[fingerprint], other)
    worker.send(request(first_id + 1, other, fingerprint))
    reply = worker.reply()
    assert reply["id"] == first_id + 1, reply
    return reply, other


def test_second_light_library_of_one_operator_runs_in_the_same_worker(worker, libraries, tmp_path):
    # Candidates of one request register one operator name. A light
    # library's registration goes when it is unloaded, so the next one
    # takes the name in this worker instead of a fresh one.
    reply, other = load_two_libraries_of_one_operator(worker, libraries, ABORT_FP, 51, tmp_path)
    assert "retry" not in reply, reply
    assert reply["verdict"]["status"] == "unverified" and reply["exit"] is False
    assert reply["details"]["library"] == str(other.resolve())
    # And back to the first: still one registration at a time.
    worker.send(request(53, libraries[ABORT_FP], ABORT_FP))
    assert worker.reply()["verdict"]["status"] == "unverified"
    assert worker.proc.poll() is None


def test_library_that_left_a_thread_running_asks_for_a_fresh_worker(worker, libraries, tmp_path):
    # Its thread runs its code: unloading it would crash the worker under
    # a later candidate. The name stays taken, so the next library of that
    # operator goes to a fresh worker.
    reply, _ = load_two_libraries_of_one_operator(worker, libraries, SLEEPER_FP, 61, tmp_path)
    assert reply["retry"] is True and reply["exit"] is True, reply
    assert "already registered" in reply["error"]
    assert worker.reply() is None
    assert worker.proc.wait(timeout=60) == 3
