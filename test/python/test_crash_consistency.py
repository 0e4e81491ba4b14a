"""Crash consistency and concurrency of dice-opt and dice-train, on a CPU.

(a) Eight `dice-opt --dice-pipeline` processes share one kernel database and
    one artifact folder, with overlapping and distinct requests, on a new
    database and on one seeded with accepted kernels: each exits 0 with the
    IR it prints when run alone; the database holds exactly the rows and
    choices the eight runs store alone (none lost, none doubled) and passes
    `PRAGMA integrity_check`; the manifest lists every lowered kernel.
(b) `dice-opt` killed with SIGKILL at seeded random points of a run: after
    each kill the database passes `PRAGMA integrity_check` and holds, per
    request, all of its candidates or none; every file of the artifact folder
    that a run trusts is whole; the next run exits 0 with the IR, database
    rows and manifest of a run that was never killed.
(c) `dice-train` (SFT, the tiny model of test_train.py) killed with SIGKILL
    in the middle of a step after its first checkpoint, and inside checkpoint
    writes: resumed with `resume = "latest"`, it starts from its newest whole
    checkpoint (a `.partial` folder is never loaded) and every later step's
    metrics, and the final weights, are those of a run that was never killed;
    the steps a killed run logged after its checkpoint are logged once. A
    resume from an earlier checkpoint into the same folder writes the later
    checkpoints, metrics (SFT) and rollouts (RL) again, over the old ones.

Candidates come from a replay file written here for the inputs'
fingerprints; the lit tests' stand-in nvcc "builds" them, so without a GPU
each ends `unverified` (or `compile_error`) and is stored. Some requests are
also seeded with an accepted candidate and a library (`dice-db import`), so
that resolve records a choice and dice-lower writes kernel libraries,
trampolines and the manifest.
"""

import contextlib
import json
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from build_tree import BIN, SOURCE_ROOT
from test_train import (DICE_TRAIN, metrics, prepare_rl, rl_run, torch_enabled, train, weights,
                        write_run)

DICE_OPT = BIN / "dice-opt"
DICE_DB = BIN / "dice-db"
FAKE_NVCC = SOURCE_ROOT / "test" / "Tools" / "dice-opt" / "Inputs" / "fake-nvcc.sh"
INPUTS = SOURCE_ROOT / "test" / "Inputs" / "torch-mlir"
FAKE_LIBRARY = b"fake library\n"  # what the stand-in nvcc writes
SEEDED_LIBRARY = b"\x7fELF seeded kernel library\n"

no_gpu = pytest.mark.skipif(Path("/proc/driver/nvidia/version").exists(),
                            reason="with a GPU the stand-in nvcc's libraries would be run")
needs_opt = pytest.mark.skipif(not DICE_OPT.exists(), reason="no dice-opt")

# (input, granularity) of each of the eight concurrent processes: two pairs
# ask for the same requests, matmul_epilogue's and self_attention's op
# requests share one, the rest are distinct.
CONCURRENT = [("mlp", "op"), ("mlp", "fusion"), ("softmax", "fusion"),
              ("layernorm", "fusion"), ("matmul_epilogue", "op"),
              ("self_attention", "op"), ("mlp", "fusion"), ("softmax", "fusion")]
# The run killed in (b): many requests, so kill points land in every pass.
KILLED = ("self_attention", "op")
KILLS = 14
STORE_KILLS = 3
TRAIN_KILLS_MID_STEP = 2
TRAIN_KILLS_IN_CHECKPOINT = 2


# --- dice-opt ---------------------------------------------------------------

def fingerprints(name, granularity):
    out = subprocess.run([str(DICE_OPT), str(INPUTS / f"{name}.mlir"),
                          f"--dice-outline=granularity={granularity}", "--dice-scaffold"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    return sorted(set(re.findall(r'dice\.kernel_request "([0-9a-f]+)"', out)))


def write_replay(path, fps):
    """Per request: two CUDA sources (built), one the stand-in nvcc rejects
    and one answer without code."""
    lines = []
    for fp in fps:
        for variant in ("a", "b", "FAKE_NVCC_ERROR"):
            source = (f"#include <torch/extension.h>\n// {fp} {variant}\n"
                      f"__global__ void k(float *y) {{ y[threadIdx.x] = 0.f; }}\n"
                      f"torch::Tensor dice_forward(torch::Tensor x0) {{ return x0; }}\n")
            lines.append({"fingerprint": fp, "cuda_source": source})
        lines.append({"fingerprint": fp, "candidate": f"I could not write {fp}."})
    path.write_text("".join(json.dumps(l) + "\n" for l in lines))


def seed_accepted(db, replay, fps, work):
    """An accepted candidate with a library for each of `fps`."""
    library = work / "seeded.so"
    library.write_bytes(SEEDED_LIBRARY)
    records = work / "seed.jsonl"
    records.write_text("".join(json.dumps({
        "fingerprint": fp, "model": f"replay:{replay.name}",
        "source": f"// seeded {fp}\n__global__ void k() {{}}\n",
        "verdict": {"status": "accepted", "kernel_ms": 0.1, "baseline_ms": 0.3, "trials": 5},
        "artifact": str(library)}) + "\n" for fp in fps))
    subprocess.run([str(DICE_DB), "import", str(db), str(records)],
                   capture_output=True, text=True, timeout=60, check=True)


def opt_command(name, granularity, db, artifacts, replay):
    return [str(DICE_OPT), str(INPUTS / f"{name}.mlir"), f"--dice-db={db}",
            f"--dice-pipeline=granularity={granularity} engine=replay:{replay} "
            f"nvcc={FAKE_NVCC} static-analysis=false jobs=1 artifacts={artifacts}"]


def run_opt(*args, **kwargs):
    proc = subprocess.run(opt_command(*args, **kwargs), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def integrity(db):
    """`PRAGMA integrity_check` of the database as a killed run left it,
    checked on a copy so that the next dice-opt finds the file untouched."""
    check = db.parent / "integrity-check"
    shutil.rmtree(check, ignore_errors=True)
    check.mkdir()
    for suffix in ("", "-wal"):
        if Path(f"{db}{suffix}").exists():
            shutil.copyfile(f"{db}{suffix}", check / f"copy.db{suffix}")
    if not (check / "copy.db").exists():
        return "ok"  # killed before the file was created
    with contextlib.closing(sqlite3.connect(check / "copy.db")) as c:
        return "\n".join(r[0] for r in c.execute("PRAGMA integrity_check"))


KEY = ("fingerprint", "fingerprint_scheme", "gpu_arch", "scaffold_version", "model_id",
       "prompt_template")


def rows(db):
    """{key + candidate hash: (rows with it, source, verdict, status, speedup,
    library)} and {key: chosen hash}, without the times a run stamps
    (created_at, chosen_at, compile_ms)."""
    if not Path(db).exists():
        return {}, {}
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as c:
        try:
            found = c.execute(f"SELECT {', '.join(KEY)}, candidate_hash, count(*), source, "
                              "verdict_json, status, speedup, artifact FROM candidates "
                              f"GROUP BY {', '.join(KEY)}, candidate_hash").fetchall()
            chosen = c.execute(f"SELECT {', '.join(KEY)}, candidate_hash FROM choices").fetchall()
        except sqlite3.OperationalError:  # killed before the schema was made
            return {}, {}
    candidates = {}
    for r in found:
        verdict = json.loads(r[9])
        verdict.pop("compile_ms", None)
        candidates[r[:7]] = (r[7], r[8], verdict, r[10], r[11], r[12])
    return candidates, {r[:6]: r[6] for r in chosen}


def by_key(candidates):
    counts = {}
    for key in candidates:
        counts[key[:6]] = counts.get(key[:6], 0) + 1
    return counts


def trusted_files_are_whole(artifacts, db):
    """Every file under `artifacts` that a later run reads without checking
    is whole: published builds, registration objects, libraries taken from
    the database, lowered libraries, trampolines and the manifest. Returns
    the leftovers no run reads (scratch folders, temporaries)."""
    stored = {}
    if Path(db).exists():
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as c:
            with contextlib.suppress(sqlite3.OperationalError):
                stored = {h: a for h, a in c.execute(
                    "SELECT candidate_hash, artifact FROM candidates WHERE artifact IS NOT NULL")}
    leftovers = []
    if not artifacts.exists():
        return leftovers
    for path in sorted(artifacts.rglob("*")):
        rel = path.relative_to(artifacts)
        if path.is_dir():
            continue
        if rel.parts[0] == "tmp" or ".tmp." in path.name:
            leftovers.append(str(rel))
        elif rel.parts[0] == "db" and len(rel.parts) == 2:  # chosen candidates' libraries
            assert path.read_bytes() == stored[path.stem], rel
        elif len(rel.parts) == 3 and re.fullmatch("[0-9a-f]{2}", rel.parts[0]):  # builds
            if path.suffix == ".so":
                assert path.read_bytes() == FAKE_LIBRARY, rel
        elif rel.parts[0] == "registration":
            assert path.read_bytes() == FAKE_LIBRARY, rel
        elif path.name.startswith("k_") and path.suffix == ".so":
            assert path.read_bytes() == SEEDED_LIBRARY, rel
        elif path.name.endswith(".ciface.c"):
            assert path.read_text().rstrip().endswith("}"), rel
        elif path.name == "manifest.json":
            for kernel in json.loads(path.read_text())["kernels"].values():
                assert (artifacts / kernel["library"]).read_bytes() == SEEDED_LIBRARY
    # A published build is a whole folder: a library, or a compile error.
    for entry in filter(Path.is_dir, artifacts.glob("[0-9a-f][0-9a-f]/*")):
        assert any(entry.glob("k_*.so")) or (entry / "compile_error.txt").exists(), entry
    return leftovers


def stop_when(proc, ready, then=0.0):
    """SIGSTOPs `proc` `then` seconds after `ready()` holds; False when it
    ended first."""
    while not ready():
        if proc.poll() is not None:
            return False
        time.sleep(0.002)
    time.sleep(then)
    if proc.poll() is not None:
        return False
    proc.send_signal(signal.SIGSTOP)
    return True


def kill(proc):
    proc.send_signal(signal.SIGKILL)
    proc.send_signal(signal.SIGCONT)
    assert proc.wait() == -signal.SIGKILL


def manifest(artifacts):
    path = artifacts / "manifest.json"
    return json.loads(path.read_text()) if path.exists() else None


@no_gpu
@needs_opt
def test_eight_processes_share_one_database(tmp_path):
    names = sorted(set(CONCURRENT))
    fps = sorted({fp for name, granularity in names for fp in fingerprints(name, granularity)})
    replay = tmp_path / "kernels.jsonl"
    write_replay(replay, fps)
    # A third of the requests have an accepted kernel when the database is
    # seeded: resolve records its choice and dice-lower merges it into the
    # shared folder's manifest.
    accepted = fps[::3]

    def prepare(scenario, db):
        if scenario == "seeded":
            seed_accepted(db, replay, accepted, tmp_path)

    for scenario in ("new", "seeded"):
        # Alone, each on a database and an artifact folder of its own.
        alone, expected, chosen, kernels = {}, {}, {}, {}
        for i, (name, granularity) in enumerate(names):
            db, artifacts = tmp_path / f"{scenario}-alone-{i}.db", tmp_path / f"{scenario}-alone-{i}"
            prepare(scenario, db)
            alone[name, granularity] = run_opt(name, granularity, db, artifacts, replay)
            found, choices = rows(db)
            assert found, (name, granularity)
            assert all(content[0] == 1 for content in found.values())
            for key, content in found.items():
                assert expected.setdefault(key, content) == content, key
            chosen.update(choices)
            kernels.update((manifest(artifacts) or {"kernels": {}})["kernels"])
        if scenario == "seeded":
            assert chosen and kernels

        # At once, on one database (new: its schema made by whichever comes
        # first) and one artifact folder, twice: then every request is a hit.
        db, artifacts = tmp_path / f"{scenario}-shared.db", tmp_path / f"{scenario}-shared"
        prepare(scenario, db)
        for round in ("first", "again"):
            procs = [subprocess.Popen(opt_command(name, granularity, db, artifacts, replay),
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                     for name, granularity in CONCURRENT]
            for (name, granularity), proc in zip(CONCURRENT, procs):
                out, err = proc.communicate(timeout=300)
                where = f"{scenario} database, {round} round: {name} {granularity}"
                assert proc.returncode == 0, f"{where}:\n{err}"
                assert out == alone[name, granularity], where
            assert integrity(db) == "ok"
            found, choices = rows(db)
            doubled = {k: c[0] for k, c in found.items() if c[0] != 1}
            assert not doubled, doubled
            assert found.keys() == expected.keys(), (scenario, round)
            assert found == expected, (scenario, round)
            assert choices == chosen, (scenario, round)
            assert (manifest(artifacts) or {"kernels": {}})["kernels"] == kernels
            trusted_files_are_whole(artifacts, db)
        print(f"{scenario} database: {len(CONCURRENT)} processes twice, {len(expected)} rows, "
              f"{len(chosen)} choices, {len(kernels)} kernels in the manifest")


@no_gpu
@needs_opt
def test_dice_opt_killed_at_random_points(tmp_path):
    name, granularity = KILLED
    fps = fingerprints(name, granularity)
    assert len(fps) >= 4, fps
    replay = tmp_path / "kernels.jsonl"
    write_replay(replay, fps)
    # Half the requests have an accepted kernel in the database: resolve
    # chooses it and dice-lower writes it out.
    seeded = tmp_path / "seeded.db"
    seed_accepted(seeded, replay, fps[::2], tmp_path)

    def fresh(label):
        work = tmp_path / label
        work.mkdir()
        shutil.copyfile(seeded, work / "kernels.db")
        return work / "kernels.db", work / "artifacts"

    db, artifacts = fresh("never-killed")
    start = time.monotonic()
    expected_ir = run_opt(name, granularity, db, artifacts, replay)
    duration = time.monotonic() - start
    expected_rows, expected_manifest = rows(db), manifest(artifacts)
    assert "dice_k_" in expected_ir and len(expected_manifest["kernels"]) == len(fps[::2])
    assert len(expected_rows[1]) == len(fps[::2])
    per_request = {k: n for k, n in by_key(expected_rows[0]).items()}

    rng = random.Random(20260)
    outcomes, leftovers = [], 0
    for i in range(KILLS + STORE_KILLS):
        db, artifacts = fresh(f"kill-{i}")
        proc = subprocess.Popen(opt_command(name, granularity, db, artifacts, replay),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if i < KILLS:
            # Spread over the run: one kill in each of KILLS equal slices.
            time.sleep(duration * (i + rng.random()) / KILLS)
            proc.send_signal(signal.SIGKILL)
            outcomes.append("killed" if proc.wait() == -signal.SIGKILL else "finished")
        else:
            # Stopped as dice-verify stores its first verdicts, then killed;
            # watched through a read-only reader, which never checkpoints.
            caught = stop_when(proc, Path(f"{db}-shm").exists)
            if caught:
                with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as r:
                    proc.send_signal(signal.SIGCONT)
                    caught = stop_when(proc, lambda: r.execute(
                        "SELECT count(*) FROM candidates").fetchone()[0] > len(fps[::2]))
            if caught:
                kill(proc)
            outcomes.append("killed while storing" if caught else "finished")
            proc.wait()
        assert integrity(db) == "ok", f"kill {i}"
        # Each request's candidates are stored together or not at all.
        found, _ = rows(db)
        for key, n in by_key(found).items():
            assert n == per_request[key], (f"kill {i}", key, n)
        leftovers += len(trusted_files_are_whole(artifacts, db))
        # The next run accepts what the killed one left.
        ir = run_opt(name, granularity, db, artifacts, replay)
        assert ir == expected_ir, f"kill {i}"
        assert rows(db) == expected_rows, f"kill {i}"
        assert manifest(artifacts) == expected_manifest, f"kill {i}"
        trusted_files_are_whole(artifacts, db)
    print({o: outcomes.count(o) for o in set(outcomes)},
          f"{leftovers} temporaries left by killed runs, none read")
    assert "killed" in outcomes and "killed while storing" in outcomes


# --- dice-train -------------------------------------------------------------

needs_trainer = pytest.mark.skipif(not torch_enabled() or not DICE_TRAIN.exists(),
                                   reason="no dice-train")
STEPS = 6
# What a step computes; its timings (step_s, tokens_per_s) are left out.
EXACT = ("step", "stage", "samples", "tokens", "answer_tokens")
CLOSE = ("loss", "lr", "grad_norm")


def sft_run(tmp_path, name, **checkpoint):
    """test_train.py's SFT run, two samples a step (an epoch of its seven
    samples ends inside the run)."""
    return write_run(tmp_path, steps=STEPS, name=name, checkpoint=checkpoint,
                     optim={"global_batch": 2})


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    """A run that was never killed: checkpoints every 2 steps."""
    tmp_path = tmp_path_factory.mktemp("straight")
    train(sft_run(tmp_path, "straight", every=2))
    return tmp_path / "straight"


def assert_same_run(straight, other):
    """`other` logged every step once, with the metrics of `straight`, and
    ended with its weights."""
    a, b = metrics(straight), metrics(other)
    assert [m["step"] for m in b] == list(range(1, STEPS + 1))
    for x, y in zip(a, b):
        assert {k: x[k] for k in EXACT} == {k: y[k] for k in EXACT}
        for key in CLOSE:
            assert x[key] == pytest.approx(y[key], rel=1e-6, abs=1e-7), (key, x, y)
    final = f"step-{STEPS:06d}"
    wa, wb = weights(straight / final), weights(other / final)
    assert wa.keys() == wb.keys()
    for tensor in wa:
        assert (wa[tensor] - wb[tensor]).abs().max() <= 1e-6, tensor


def checkpoints(folder):
    """Whole checkpoints (a name without a dot) and partial ones."""
    names = [p.name for p in Path(folder).glob("step-*")]
    return sorted(n for n in names if "." not in n), sorted(n for n in names if "." in n)


def logged_steps(folder):
    path = Path(folder) / "metrics.jsonl"
    return path.read_text().count("\n") if path.exists() else 0


def stop_mid_step(proc, folder, after, fraction):
    """SIGSTOPs the training `proc` `fraction` of a step (as long as its last
    one) after it logged step `after` with a checkpoint written; False when
    it ended first."""
    if not stop_when(proc, lambda: (folder / "step-000002").exists()
                     and logged_steps(folder) >= after):
        return False
    step_s = metrics(folder)[-1]["step_s"]
    proc.send_signal(signal.SIGCONT)
    return stop_when(proc, lambda: True, then=fraction * step_s)


def start_training(config):
    return subprocess.Popen([str(DICE_TRAIN), "--config", str(config)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def resume_and_compare(tmp_path, name, straight):
    """Resumes the killed run `name`: it must start from its newest whole
    checkpoint and end as the run that was never killed. Returns the step."""
    folder = tmp_path / name
    whole, _ = checkpoints(folder)
    # A folder that is not a whole checkpoint, however complete it looks, is
    # never loaded.
    decoy = folder / "step-999999.partial"
    shutil.copytree(folder / whole[-1], decoy, dirs_exist_ok=True)
    state = json.loads((decoy / "trainer" / "trainer_state.json").read_text())
    state["step"] = 999999
    (decoy / "trainer" / "trainer_state.json").write_text(json.dumps(state))
    result = train(sft_run(tmp_path, name, every=2, resume='"latest"'))
    step = int(whole[-1].split("-")[1])
    assert re.search(rf"resumed \S*{name}/{whole[-1]} at step {step}\n", result.stderr), \
        result.stderr
    assert_same_run(straight, folder)
    return step


@needs_trainer
def test_dice_train_killed_mid_step_resumes_without_loss(tmp_path, straight):
    rng = random.Random(7)
    resumed_from = []
    for i in range(TRAIN_KILLS_MID_STEP):
        # After the first checkpoint, a random fraction into a later step,
        # timed by this run's own last step. A run that ends first (the
        # machine got faster) is tried again, sooner.
        after, fraction = rng.randint(2, STEPS - 2), rng.random()
        for attempt in range(4):
            name = f"killed-{i}-{attempt}"
            folder = tmp_path / name
            proc = start_training(sft_run(tmp_path, name, every=2))
            if stop_mid_step(proc, folder, after, fraction / 4**attempt):
                break
            proc.wait()
        else:
            pytest.fail(f"every run ended before its kill after step {after}")
        done = logged_steps(folder)
        kill(proc)
        assert 2 <= done < STEPS
        if i == 0:
            # As a kill inside the write of a long line would leave it.
            with open(folder / "metrics.jsonl", "a") as log:
                log.write('{"step": %d, "stage": "sf' % (done + 1))
        resumed_from.append(resume_and_compare(tmp_path, name, straight))
    print(f"killed mid-step, resumed from steps {resumed_from}")


@needs_trainer
def test_dice_train_killed_inside_checkpoint_writes(tmp_path, straight):
    # Stopped the moment a `.partial` folder appears; killed when it is
    # still there (inside the write), let go on otherwise. Every step writes
    # a checkpoint, so each run gives several chances.
    caught = attempts = 0
    while caught < TRAIN_KILLS_IN_CHECKPOINT:
        attempts += 1
        assert attempts <= 20, f"no kill landed inside a checkpoint write in {attempts - 1} runs"
        name = f"killed-{attempts}"
        proc = start_training(sft_run(tmp_path, name, every=1))
        folder = tmp_path / name
        landed = False
        while not landed and stop_when(proc, lambda: any(folder.glob("step-*.partial"))):
            whole, partial = checkpoints(folder)
            if partial and whole:  # inside a write, after the first checkpoint
                kill(proc)
                landed = True
            else:
                proc.send_signal(signal.SIGCONT)
                while any(folder.glob("step-*.partial")) and proc.poll() is None:
                    time.sleep(0.001)
        if not landed:
            proc.wait()
            continue
        caught += 1
        # The resumed run writes that checkpoint again, over its `.partial`.
        resume_and_compare(tmp_path, name, straight)
    print(f"{caught} kills inside a checkpoint write in {attempts} runs")


@needs_trainer
def test_dice_train_resumed_from_an_earlier_checkpoint_rewrites_later_ones(tmp_path, straight):
    # The straight run taken back to step 2 in its own folder: the later
    # steps' metrics and checkpoints are written again, over the old ones.
    again = tmp_path / "again"
    shutil.copytree(straight, again)
    result = train(sft_run(tmp_path, "again", every=2,
                           resume=f'"{again / "step-000002"}"'))
    assert "at step 2\n" in result.stderr
    assert checkpoints(again) == ([f"step-{s:06d}" for s in range(2, STEPS + 1, 2)], [])
    assert_same_run(straight, again)


@needs_trainer
def test_dice_train_rl_resume_takes_back_the_steps_logged_after_its_checkpoint(tmp_path):
    # test_train.py's RL stage: a checkpoint every step, the second step's
    # rollouts and metrics logged; then resumed in the same folder from the
    # first checkpoint, as after a kill between step 2's log and its
    # checkpoint.
    prepare_rl(tmp_path)

    def rl(**checkpoint):
        return rl_run(tmp_path, checkpoint, overlap_verification="false")

    folder = tmp_path / "rl"
    train(rl(every=1))
    log = (folder / "rollouts.jsonl").read_text()
    logged = metrics(folder)
    assert [m["step"] for m in logged] == [1, 2] and log.count("\n") == 12
    result = train(rl(every=1, resume=f'"{folder / "step-000001"}"'))
    assert "at step 1\n" in result.stderr
    assert (folder / "rollouts.jsonl").read_text() == log
    again = metrics(folder)
    assert [m["step"] for m in again] == [1, 2]
    for x, y in zip(logged, again):
        assert {k: v for k, v in x.items() if not k.endswith("_s")} == \
            {k: v for k, v in y.items() if not k.endswith("_s")}
