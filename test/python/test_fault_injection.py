"""Fault injection, CPU side: every fault of the corpus through the tools.

The corpus's `fault_*.cu` candidates go out of bounds, trap, loop forever on
the device or the host, segfault, abort, throw, allocate huge host or device
memory, fork and exec, write outside the scratch folder, read other files,
open sockets, probe the environment, overflow the stack and flood stdout and
stderr. Without a GPU, `dice-verify --cpu-run` runs their host code in
sandboxed CPU-mode workers (kernels do not run), with the static analysis
first. Each must end in the verdict labels.json gives for the CPU run
(`cpu`), within the configured watchdog; dice-verify must exit normally
with one verdict per candidate; and honest candidates queued after the
faults must still be judged by replacement workers. Without the analysis
(as on GPU machines, which have no Clang) the sandbox alone must refuse the
write outside scratch and the sockets and kill the forked helper.
`dice-opt --dice-pipeline` offered the faults by a replay engine must exit
0, leave the function as it came in and leave its kernel database intact.
The GPU side is test/gpu/run-faults.sh.
"""

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from build_tree import BIN, BUILD_DIR, SOURCE_ROOT

sys.path.insert(0, str(SOURCE_ROOT / "test" / "gpu"))
from process_watch import processes_with_argv, run_timed  # noqa: E402

DICE_VERIFY = BIN / "dice-verify"
WORKER = BIN / "dice-verify-worker"
DICE_OPT = BIN / "dice-opt"
DICE_DB = BIN / "dice-db"
CORPUS = SOURCE_ROOT / "test" / "verifier" / "corpus"
FAKE_NVCC = SOURCE_ROOT / "test" / "Tools" / "dice-opt" / "Inputs" / "fake-nvcc.sh"
MLP = SOURCE_ROOT / "test" / "Inputs" / "torch-mlir" / "mlp.mlir"
NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
CACHE = Path(os.environ.get("DICE_TEST_KERNEL_CACHE", BUILD_DIR / "test" / "kernel-cache"))

pytestmark = [
    pytest.mark.skipif(not DICE_VERIFY.exists() or not WORKER.exists(),
                       reason="dice-verify or dice-verify-worker is not built"),
    pytest.mark.skipif(not Path(NVCC).exists(), reason="no nvcc"),
    pytest.mark.skipif(Path("/proc/driver/nvidia/version").exists(),
                       reason="a GPU machine runs test/gpu/run-faults.sh instead"),
]

TIMEOUT_S = 10  # [verifier] timeout_s of these runs
# WorkerPoolOptions::startTimeoutSeconds: the pool's bound on starting a
# (replacement) worker, which the candidate after a crash waits for.
WORKER_START_S = 120
HONEST_AFTER = ["honest_relu_dispatch.cu", "honest_add.cu"]
SIGNATURE = re.compile(r"((?:std::vector<torch::Tensor>)|(?:torch::Tensor))\s+dice_forward\s*\(([^)]*)\)")

# Words each CPU-run verdict's reason must hold, beside its status (labels.json `cpu`).
CPU_REASONS = {
    "fault_abort.cu": ["killed its worker process", "SIGABRT", "replaced"],
    "fault_host_segfault.cu": ["killed its worker process", "SIGSEGV"],
    "fault_host_oob.cu": ["killed its worker process", "SIGSEGV"],
    "fault_stack_overflow.cu": ["killed its worker process", "SIGSEGV"],
    "fault_host_infinite_loop.cu": [f"did not finish within {TIMEOUT_S} s", "killed and replaced"],
    "fault_throw.cu": ["CPU smoke run: the call threw", "not a std::exception"],
    "fault_huge_host_alloc.cu": ["CPU smoke run: the call threw", "bad_alloc"],
    "fault_throws_before_launch.cu": ["CPU smoke run: the call threw", "expects a 1-D tensor"],
    # The CPU allocator refuses 64 TiB or hands out untouched address space,
    # as the machine's overcommit policy decides; the kernel never runs.
    "fault_huge_device_alloc.cu": ["CPU smoke run: the call"],
    # 256 MiB of output went to the worker's log, none to dice-verify's.
    "fault_output_flood.cu": ["CPU smoke run: the call returned 1 tensor"],
    # Device-side faults: the host code returns, the kernel does not run.
    "fault_infinite_loop.cu": ["CPU smoke run: the call returned 1 tensor"],
    "fault_oob_write.cu": ["CPU smoke run: the call returned 1 tensor"],
    "fault_trap.cu": ["CPU smoke run: the call returned 1 tensor"],
    "fault_wrong_result.cu": ["CPU smoke run: the call returned 1 tensor"],
    # Caught by the static analysis before anything is built.
    "fault_asm_trap.cu": ["inline_ptx_control", "trap"],
    "fault_fork_exec.cu": ["system_access", "`fork`", "`execl`"],
    "fault_write_outside_scratch.cu": ["system_access", "`fopen`"],
    "fault_read_file.cu": ["system_access", "ifstream"],
    "fault_socket.cu": ["system_access", "`socket`", "`connect`"],
    "fault_env_probe.cu": ["system_access", "`getenv`", "`environ`"],
}


def labels():
    return json.loads((CORPUS / "labels.json").read_text())


def faults():
    return [name for name, label in labels().items() if "fault" in label]


def candidate(name, fingerprint):
    """A batch line for corpus file `name`: its source, its `dice_forward`
    declaration and its reference program."""
    source = (CORPUS / name).read_text()
    result, params = SIGNATURE.search(source).groups()
    program = json.loads((CORPUS / "programs" / (Path(name).stem + ".json")).read_text())
    return {"name": name, "fingerprint": fingerprint, "cuda_source": source,
            "signature": f"{result} dice_forward({params.strip()});", "program": program}


def write_batch(path, names, prefix):
    rows = [candidate(name, f"{prefix}{i:013x}") for i, name in enumerate(names)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def run_tool(args, timeout):
    """run_timed, failing the test when the watchdog had to kill the tool."""
    rc, stdout, lines, _, killed = run_timed(args, timeout)
    assert not killed, f"{args[0]} still ran after {timeout} s"
    return rc, stdout, lines


def json_lines(stdout):
    lines = [l for l in stdout.splitlines() if l.strip()]
    assert all(l.startswith("{") for l in lines), "stray output on dice-verify's stdout"
    return [json.loads(l) for l in lines]


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    path = tmp_path_factory.mktemp("faults") / "dice.toml"
    path.write_text(f"[verifier]\ntimeout_s = {TIMEOUT_S}\n")
    return path


@pytest.fixture(scope="module")
def fault_run(tmp_path_factory, config):
    """Every fault, then honest candidates, through the sandboxed CPU run
    with the static analysis, one worker taking them in order (so each crash
    costs the only worker); the kernel libraries are built first."""
    root = tmp_path_factory.mktemp("fault-run")
    batch = root / "batch.jsonl"
    rows = write_batch(batch, faults() + HONEST_AFTER, "fa")
    # Builds only (no --cpu-run: nothing runs), so that the timed run
    # below finds every library in the cache.
    build = subprocess.run([str(DICE_VERIFY), "--batch", str(batch), "--json", "--no-analysis",
                            "--jobs", "2", "--cache", str(CACHE)],
                           capture_output=True, text=True, timeout=3600)
    built = json_lines(build.stdout)
    assert len(built) == len(rows), build.stderr
    unbuilt = {r["name"]: v["reason"] for r, v in zip(rows, built) if v["status"] != "unverified"}
    assert not unbuilt, unbuilt
    # The watchdog bounds each candidate's check; the analysis (PCH and one
    # parse per candidate) comes first. Only a guard: the per-candidate
    # bound is asserted from the progress lines.
    guard = 900 + len(rows) * (TIMEOUT_S + WORKER_START_S)
    rc, stdout, stderr = run_tool(
        [DICE_VERIFY, "--batch", batch, "--cpu-run", "--json", "--progress", "--jobs", 2,
         "--workers", 1, "--cache", CACHE, "--config", config], timeout=guard)
    return {"rows": rows, "rc": rc, "verdicts": json_lines(stdout), "stderr": stderr}


def test_dice_verify_exits_normally_with_one_verdict_each(fault_run):
    stderr = "\n".join(line for _, line in fault_run["stderr"])
    assert fault_run["rc"] == 1, f"exit {fault_run['rc']} (negative: a signal)\n{stderr}"
    assert len(fault_run["verdicts"]) == len(fault_run["rows"]), stderr
    assert "no CUDA device: candidates run on the CPU only" in stderr


def test_every_fault_gets_its_cpu_verdict(fault_run):
    all_labels = labels()
    wrong = []
    for row, verdict in zip(fault_run["rows"], fault_run["verdicts"]):
        name = row["name"]
        if name not in all_labels or "fault" not in all_labels[name]:
            continue
        want = all_labels[name]["cpu"]
        missing = [w for w in CPU_REASONS[name] if w not in verdict["reason"]]
        if verdict["status"] != want or missing:
            wrong.append(f"{name}: {verdict['status']} (want {want}), missing {missing}: "
                         f"{verdict['reason'][:300]}")
        # Nothing ran on a GPU: no timing, ever.
        assert verdict["kernel_ms"] is None and verdict["speedup"] is None, name
    assert not wrong, "\n".join(wrong)
    assert set(CPU_REASONS) == set(faults()), "a fault without its expected reason"


def test_each_check_ends_within_the_watchdog(fault_run):
    # One worker takes the candidates in order; a candidate's check ends at
    # its "checked" line, at most the watchdog after it was sent, plus the
    # start of a replacement worker when the one before killed its worker.
    checked = [(t, line) for t, line in fault_run["stderr"] if line.startswith("dice-verify: checked ")]
    built = [t for t, line in fault_run["stderr"] if line.startswith("dice-verify: built ")]
    assert built and checked, fault_run["stderr"]
    expected = sum(1 for v in fault_run["verdicts"] if v["status"] != "deceptive")
    assert checked[-1][1] == f"dice-verify: checked {expected}/{expected}"
    previous = built[-1]
    for t, line in checked:
        assert t - previous <= TIMEOUT_S + WORKER_START_S, (line, t - previous)
        previous = t


def test_honest_candidates_after_the_faults_are_judged(fault_run):
    after = [(r, v) for r, v in zip(fault_run["rows"], fault_run["verdicts"])
             if r["name"] in HONEST_AFTER]
    assert len(after) == len(HONEST_AFTER)
    for row, verdict in after:
        # A replacement worker ran the host code: up to its launch, which
        # fails without a device (a launch check throws, or it returns).
        assert verdict["status"] == "unverified", (row["name"], verdict)
        assert verdict["reason"].startswith("CPU smoke run: the call "), verdict
    # The pool never gave up starting workers.
    for verdict in fault_run["verdicts"]:
        assert "could not run the candidate" not in verdict["reason"], verdict


def test_the_sandbox_alone_contains_what_the_analysis_catches(tmp_path, config):
    # As on a GPU machine without Clang: the statically caught faults run.
    names = [n for n in faults() if labels()[n]["static"] and n != "fault_asm_trap.cu"]
    batch = tmp_path / "batch.jsonl"
    rows = write_batch(batch, names + HONEST_AFTER[:1], "fb")
    escape = CACHE / "dice-fault-escape.txt"  # ../../ of a worker's scratch
    escape.unlink(missing_ok=True)
    sleeper = [b"sleep", b"613"]  # the helper fault_fork_exec.cu leaves running
    assert not processes_with_argv(sleeper), "a sleep 613 runs already"
    rc, stdout, stderr = run_tool(
        [DICE_VERIFY, "--batch", batch, "--cpu-run", "--json", "--no-analysis", "--jobs", 2,
         "--cache", CACHE, "--config", config],
        timeout=900 + len(rows) * (TIMEOUT_S + WORKER_START_S))
    notes = "\n".join(line for _, line in stderr)
    assert rc == 1, notes
    verdicts = dict(zip(names + HONEST_AFTER[:1], json_lines(stdout)))
    assert len(verdicts) == len(rows), notes
    for name, verdict in verdicts.items():
        assert verdict["status"] == "unverified", (name, verdict)
        assert verdict["reason"].startswith("CPU smoke run: the call "), (name, verdict)

    # Writes outside scratch: Landlock refuses them. Sockets of families
    # that reach other hosts: the seccomp filter says EACCES. A kernel
    # without the measure cannot show it (the run's notes say so).
    unchecked = []
    if "landlock-writes not applied" not in notes:
        reason = verdicts["fault_write_outside_scratch.cu"]["reason"]
        assert "threw" in reason and "Permission denied" in reason, reason
        assert not escape.exists(), escape.read_text()
    else:
        unchecked.append("landlock-writes")
    if "seccomp-filter not applied" not in notes:
        reason = verdicts["fault_socket.cu"]["reason"]
        assert "threw" in reason and "Permission denied" in reason, reason
    else:
        unchecked.append("seccomp-filter")
    # The helper process outlived the call, not the pool: its process group
    # was killed when dice-verify shut the workers down.
    assert verdicts["fault_fork_exec.cu"]["reason"].startswith(
        "CPU smoke run: the call returned 1 tensor")
    assert not processes_with_argv(sleeper), "fault_fork_exec.cu's helper outlived dice-verify"
    # Reads are not confined (docs/verifier.md, Limits): the analysis is the
    # defence, and these ran to their kernel launch.
    for name in ("fault_read_file.cu", "fault_env_probe.cu"):
        assert verdicts[name]["reason"].startswith("CPU smoke run: the call returned 1 tensor")
    if unchecked:
        pytest.skip(f"this kernel does not offer {', '.join(unchecked)}: "
                    "what it would refuse was not checked")


def with_parameters(source, count):
    """`source` with `dice_forward` taking `count` tensors."""
    params = ", ".join(f"torch::Tensor x{i}" for i in range(count))
    return SIGNATURE.sub(lambda m: f"torch::Tensor dice_forward({params})", source, count=1)


@pytest.mark.skipif(not DICE_OPT.exists() or not DICE_DB.exists(), reason="no dice-opt")
def test_dice_opt_falls_back_on_every_fault_and_keeps_its_database(tmp_path):
    # mlp.mlir at fusion granularity: two requests of three tensors each.
    requests = {"b679a03703be38d7": faults(),
                "839eddaf27ff7c4f": ["fault_host_segfault.cu", "fault_socket.cu"]}
    replay = tmp_path / "faults.jsonl"
    lines = []
    for fingerprint, names in requests.items():
        for name in names:
            source = with_parameters((CORPUS / name).read_text(), 3)
            lines.append(json.dumps({"fingerprint": fingerprint, "cuda_source": source}))
    replay.write_text("\n".join(lines) + "\n")
    db = tmp_path / "k.db"
    plain = subprocess.run([str(DICE_OPT), str(MLP)], capture_output=True, text=True,
                           timeout=120, check=True).stdout
    pipeline = (f"granularity=fusion engine=replay:{replay} nvcc={FAKE_NVCC} "
                f"artifacts={tmp_path / 'artifacts'}")
    for run in ("cold", "warm"):  # the engine, then the database
        proc = subprocess.run([str(DICE_OPT), str(MLP), f"--dice-db={db}",
                               f"--dice-pipeline={pipeline}"],
                              capture_output=True, text=True, timeout=1800, cwd=tmp_path)
        assert proc.returncode == 0, (run, proc.stderr[-3000:])
        assert proc.stdout == plain, f"{run}: the function changed"
        assert proc.stderr.count("falling back to the original ops") == 2, proc.stderr[-3000:]
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)], run
        for fingerprint, names in requests.items():
            listing = subprocess.run([str(DICE_DB), "list", str(db), "--fingerprint", fingerprint,
                                      "--model", f"replay:{replay.name}"],
                                     capture_output=True, text=True, timeout=120, check=True).stdout
            # One line per candidate: its hash, its status, ...
            statuses = [l.split()[1] for l in listing.splitlines() if l.strip()]
            want = ["deceptive" if labels()[n]["static"] else "unverified" for n in names]
            assert sorted(statuses) == sorted(want), (run, fingerprint, listing)


@pytest.mark.skipif(not (BIN / "dice-train").exists(), reason="no dice-train (DICE_ENABLE_TORCH)")
def test_a_failing_verifier_costs_dice_train_its_rewards_not_the_run(tmp_path):
    # dice-train runs the dice-verify beside the worker DICE_VERIFY_WORKER
    # names (VerifierProcess.cpp): here one that dies of SIGSEGV on its first
    # call (step 1) and writes a verdict cut short on its second (step 2).
    from test_train import metrics, prepare_rl, rl_run, train
    fake = tmp_path / "fake-bin"
    fake.mkdir()
    (fake / "dice-verify-worker").write_text("")
    (fake / "dice-verify").write_text(
        "#!/bin/sh\nulimit -c 0\n"
        "calls=$(cat \"$0.calls\" 2>/dev/null || echo 0)\n"
        "echo $((calls + 1)) > \"$0.calls\"\n"
        "[ \"$calls\" = 0 ] && kill -SEGV $$\n"
        "echo '{\"status\": \"accepted\", \"speedup\": '\nexit 1\n")
    (fake / "dice-verify").chmod(0o755)
    prepare_rl(tmp_path)
    result = train(rl_run(tmp_path), env=dict(os.environ, DICE_VERIFY_WORKER=str(fake / "dice-verify-worker")))
    assert (fake / "dice-verify.calls").read_text().strip() == "2"
    assert "dice-verify was killed by signal 11" in result.stderr
    assert "dice-verify wrote an unreadable verdict" in result.stderr
    steps = metrics(tmp_path / "rl")
    assert [m["step"] for m in steps] == [1, 2]
    for m in steps:
        # Every rollout unjudged: no reward, no group with a signal.
        assert m["unverified_rate"] == 1.0 and m["reward_mean"] == 0.0, m
        assert m["dropped_groups"] == 2, m
    log = [json.loads(line) for line in (tmp_path / "rl" / "rollouts.jsonl").read_text().splitlines()]
    assert len(log) == 12
    why = {1: "not judged: dice-verify was killed by signal 11",
           2: "not judged: dice-verify wrote an unreadable verdict"}
    assert all(r["status"] == "unverified" and r["reason"].startswith(why[r["step"]])
               for r in log), log
    assert (tmp_path / "rl" / "step-000002" / "trainer" / "trainer_state.json").exists()
