"""dice-train end to end on a CPU, on a tiny model with a byte-level tokenizer.

(a) SFT's BD3-LM loss falls on a small set;
(b) a run stopped at a checkpoint and resumed takes the same next steps as
    one that was not stopped (weights, optimizer, schedule, data position);
(c) a checkpoint loads in transformers' Qwen3 with the logits of the C++
    runtime, and weights saved back by transformers train on unchanged;
(d) two ranks through torchrun and Gloo give the parameters of one rank
    with the same global batch (optimizer state sharded or not);
(e) an RL stage runs its rollouts through the verifier and says, in its
    metrics and rollout log, what each candidate got;
(f) bad configurations and data are errors naming the file, line and key.
"""

import json
import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from build_tree import BUILD_DIR
from dice.tiny_checkpoint import write_tiny_checkpoint
from test_model_numerics import cpp_logits, hf_logits, hf_model

DICE_TRAIN = BUILD_DIR / "bin" / "dice-train"


def torch_enabled():
    cache = BUILD_DIR / "CMakeCache.txt"
    return not cache.exists() or "DICE_ENABLE_TORCH:BOOL=OFF" not in cache.read_text()


pytestmark = pytest.mark.skipif(
    not torch_enabled(), reason="built with DICE_ENABLE_TORCH=OFF: no trainer")

# Short pairs, so a byte-level tokenizer keeps samples small.
SFT_ROWS = [{"id": f"add{i}", "pytorch_code": f"y = x + {i}",
             "cuda_code": f"out[i] = in[i] + {i}.0f;", "level": 1} for i in range(6)] + \
           [{"id": "relu", "pytorch_code": "y = relu(x)", "cuda_code": "out[i] = fmaxf(in[i], 0);",
             "prefix": "import torch\n", "middle": 'source = """relu"""', "suffix": "end\n"}]


def write_run(tmp_path, steps, name="run", **sections):
    """A tiny model, the SFT rows and a train.toml; returns the config path."""
    model = tmp_path / "model"
    if not model.exists():
        write_tiny_checkpoint(model, dtype="float32", byte_tokenizer=True,
                              hidden_size=48, intermediate_size=64)
        (tmp_path / "sft.jsonl").write_text("".join(json.dumps(r) + "\n" for r in SFT_ROWS))
    config = {
        "run": {"stage": '"sft"', "steps": steps, "seed": 3},
        "model": {"path": '"model"'},
        "data": {"sft": '["sft.jsonl"]', "max_length": 1024, "pack_length": 4096},
        "optim": {"lr": 3e-3, "global_batch": 4, "micro_batch": 2,
                  "schedule": '"cosine"', "warmup_steps": 2, "weight_decay": 0.01},
        "checkpoint": {"dir": f'"{name}"'},
        "metrics": {"status": '"off"'},
    }
    for section, values in sections.items():
        config.setdefault(section, {}).update(values)
    text = "".join(f"[{s}]\n" + "".join(f"{k} = {v}\n" for k, v in kv.items()) + "\n"
                   for s, kv in config.items())
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


def train(config, *extra, env=None, check=True):
    assert DICE_TRAIN.exists(), f"no dice-train at {DICE_TRAIN} (set DICE_BUILD_DIR)"
    result = subprocess.run([str(DICE_TRAIN), "--config", str(config), *extra],
                            capture_output=True, text=True, timeout=600, env=env)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def metrics(folder):
    return [json.loads(line) for line in (Path(folder) / "metrics.jsonl").read_text().splitlines()]


def weights(checkpoint):
    state = {}
    for file in sorted(Path(checkpoint).glob("model*.safetensors")):
        state.update(load_file(str(file)))
    return state


def test_sft_loss_falls(tmp_path):
    config = write_run(tmp_path, steps=24)
    train(config)
    losses = [m["loss"] for m in metrics(tmp_path / "run")]
    assert len(losses) == 24
    assert all(m["stage"] == "sft" for m in metrics(tmp_path / "run"))
    first, last = sum(losses[:3]) / 3, sum(losses[-3:]) / 3
    print(f"BD3-LM loss {first:.3f} -> {last:.3f}")
    assert last < 0.6 * first
    state = json.loads((tmp_path / "run" / "step-000024" / "trainer" / "trainer_state.json").read_text())
    assert state["step"] == 24 and state["data_position"] == 24 * 4


def test_resume_takes_the_same_next_steps(tmp_path):
    straight = write_run(tmp_path, steps=4, name="straight",
                         checkpoint={"every": 2})
    train(straight)
    # Stopped after step 2, resumed from its checkpoint in another folder.
    stopped = write_run(tmp_path, steps=2, name="stopped")
    train(stopped)
    resumed = write_run(tmp_path, steps=4, name="stopped",
                        checkpoint={"resume": '"latest"'})
    result = train(resumed)
    assert "resumed" in result.stderr
    a, b = metrics(tmp_path / "straight"), metrics(tmp_path / "stopped")
    assert [m["step"] for m in b] == [1, 2, 3, 4]
    for x, y in zip(a, b):
        assert x["loss"] == pytest.approx(y["loss"], rel=1e-6, abs=1e-7)
        assert x["lr"] == pytest.approx(y["lr"])
    wa, wb = weights(tmp_path / "straight" / "step-000004"), weights(tmp_path / "stopped" / "step-000004")
    assert wa.keys() == wb.keys()
    for name in wa:
        assert torch.allclose(wa[name], wb[name], rtol=0, atol=1e-6), name


def test_checkpoint_round_trip_through_transformers(tmp_path):
    config = write_run(tmp_path, steps=3)
    train(config)
    checkpoint = tmp_path / "run" / "step-000003"
    ids = [72, 105, 33, 256, 10, 11, 40, 41, 97, 98, 99, 257, 5]
    model = hf_model(checkpoint)
    reference = hf_logits(model, ids, block=4)
    ours = cpp_logits(checkpoint, ids, tmp_path)["logits"]
    assert (ours - reference).abs().max().item() <= 1e-4
    # Saved back by transformers, the weights train on as before.
    back = tmp_path / "back"
    model.save_pretrained(back, safe_serialization=True)
    for name in ["config.json", "generation_config.json", "vocab.json", "merges.txt",
                 "tokenizer_config.json", "added_tokens.json"]:
        shutil.copy(checkpoint / name, back / name)
    a = write_run(tmp_path, steps=1, name="from-ours", model={"path": f'"{checkpoint}"'})
    b = write_run(tmp_path, steps=1, name="from-hf", model={"path": f'"{back}"'})
    train(a)
    train(b)
    assert metrics(tmp_path / "from-ours")[0]["loss"] == pytest.approx(
        metrics(tmp_path / "from-hf")[0]["loss"], rel=1e-6)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("shard", ["true", "false"])
def test_two_gloo_ranks_give_one_ranks_parameters(tmp_path, shard):
    one = write_run(tmp_path, steps=2, name="one", optim={"shard_optimizer": shard})
    two = write_run(tmp_path, steps=2, name="two", optim={"shard_optimizer": shard})
    train(one)
    torchrun = Path(os.environ.get("DICE_PYTHON", BUILD_DIR.parent / ".venv/bin/python")).parent / "torchrun"
    if not torchrun.exists():
        torchrun = shutil.which("torchrun")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    result = subprocess.run(
        [str(torchrun), "--nproc-per-node", "2", "--master-port", str(free_port()),
         "--no-python", str(DICE_TRAIN), "--config", str(two)],
        capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "2 rank(s) (gloo)" in result.stderr
    wa, wb = weights(tmp_path / "one" / "step-000002"), weights(tmp_path / "two" / "step-000002")
    # The same up to the order of fp32 sums (an Adam step moves each weight
    # by up to lr = 3e-3: a wrong gradient shows at that scale).
    for name in wa:
        assert torch.allclose(wa[name], wb[name], rtol=0, atol=1e-5), name
    oa = load_file(str(tmp_path / "one" / "step-000002" / "trainer" / "optimizer.safetensors"))
    ob = load_file(str(tmp_path / "two" / "step-000002" / "trainer" / "optimizer.safetensors"))
    assert oa.keys() == ob.keys()
    for name in oa:
        assert torch.allclose(oa[name], ob[name], rtol=1e-4, atol=1e-8), name
    for x, y in zip(metrics(tmp_path / "one"), metrics(tmp_path / "two")):
        assert x["loss"] == pytest.approx(y["loss"], rel=1e-5)
    # A checkpoint of two ranks resumes on one.
    more = write_run(tmp_path, steps=3, name="two", optim={"shard_optimizer": shard},
                     checkpoint={"resume": '"latest"'})
    train(more)
    assert [m["step"] for m in metrics(tmp_path / "two")] == [1, 2, 3]


def test_bad_configuration_and_data_are_located_errors(tmp_path):
    config = write_run(tmp_path, steps=1, optim={"learning_rate": 1})
    result = train(config, check=False)
    assert result.returncode == 1
    assert f"{config}:" in result.stderr and "optim.learning_rate" in result.stderr
    assert "unknown key" in result.stderr
    (tmp_path / "bad.jsonl").write_text('{"pytorch_code": "x", "cuda_code": "y", "level": 1}\n'
                                        '{"pytorch_code": "x", "level": 1}\n')
    config = write_run(tmp_path, steps=1, data={"sft": '["bad.jsonl"]'})
    result = train(config, check=False)
    assert result.returncode == 1
    assert "bad.jsonl:2" in result.stderr and "cuda_code" in result.stderr
    result = train(write_run(tmp_path, steps=1), "--set", "optim.lr=-1", check=False)
    assert result.returncode == 1 and "optim.lr" in result.stderr


def prepare_rl(tmp_path):
    """What an RL run starts from: a one-step SFT run (`run/step-000001`) and
    two tasks of the project's own training pack, as `dice train prepare`
    wrote it (`packs.jsonl`)."""
    train(write_run(tmp_path, steps=1))
    pack = Path(__file__).resolve().parents[2] / "train" / "data" / "packs-train.jsonl"
    (tmp_path / "packs.jsonl").write_text("".join(pack.read_text().splitlines(True)[:2]))


def rl_run(tmp_path, checkpoint=None, **rl):
    """The config of a two-step RL run (folder `rl`) from prepare_rl's
    checkpoint: 2 tasks x 3 rollouts a step, `rl` keys added."""
    return write_run(
        tmp_path, steps=2, name="rl", checkpoint=checkpoint or {},
        run={"stage": '"rl-infill"'},
        model={"path": '"run/step-000001"'},
        data={"tasks": '["packs.jsonl"]', "pack_length": 16384},
        optim={"global_batch": 2, "lr": 1e-4},
        rl={"rollouts": 3, **rl},
        sampling={"max_tokens": 12, "remasking": '"dynamic"', "top_k": 0})


def test_rl_stage_rewards_each_rollout_by_its_verdict(tmp_path):
    prepare_rl(tmp_path)
    train(rl_run(tmp_path, overlap_verification="false"))
    steps = metrics(tmp_path / "rl")
    assert [m["step"] for m in steps] == [1, 2]
    for m in steps:
        assert m["stage"] == "rl-infill" and m["rollouts"] == 6 and m["groups"] == 2
        # A random model writes no `source = """..."""`: each rollout is a
        # compile error, so no group has a reward to learn from.
        assert m["compile_error_rate"] == 1.0 and m["reward_mean"] == 0.0
        assert m["dropped_groups"] == 2
    log = [json.loads(line) for line in (tmp_path / "rl" / "rollouts.jsonl").read_text().splitlines()]
    assert len(log) == 12
    assert {r["status"] for r in log} == {"compile_error"}
    assert all(r["reason"] and r["signature"].startswith("torch::Tensor dice_forward")
               for r in log)
    assert (tmp_path / "rl" / "step-000002" / "trainer" / "trainer_state.json").exists()


def test_speed_reward_needs_verification_apart_from_generation(tmp_path):
    # Overlapped, kernels are timed while the model generates on the same
    # GPU: a reward for their speed would pay for noise.
    result = train(rl_run(tmp_path, speed_reward=0.5), check=False)
    assert result.returncode == 1
    assert "rl.speed_reward" in result.stderr and "rl.overlap_verification = false" in result.stderr
    assert not (tmp_path / "rl" / "metrics.jsonl").exists()


def test_evaluation_judges_every_task_once_and_changes_nothing(tmp_path):
    sft = write_run(tmp_path, steps=1)
    train(sft)
    pack = Path(__file__).resolve().parents[2] / "train" / "data" / "packs-train.jsonl"
    rows = pack.read_text().splitlines(True)[:3]
    (tmp_path / "packs.jsonl").write_text("".join(rows))
    config = write_run(
        tmp_path, steps=1, name="eval",
        run={"stage": '"eval-e2e"'},
        model={"path": '"run/step-000001"'},
        data={"tasks": '["packs.jsonl"]', "pack_length": 16384},
        optim={"global_batch": 2},  # two chunks: tasks 1-2, then 3
        rl={"rollouts": 2},
        sampling={"max_tokens": 12, "temperature": 0})
    result = train(config)
    assert "tasks 3-3 of 3" in result.stderr
    summary = json.loads((tmp_path / "eval" / "eval-summary.json").read_text())
    assert summary["stage"] == "eval-e2e" and summary["tasks"] == 3
    assert summary["candidates"] == 6
    # Twelve tokens of a one-step model are no program: nothing builds.
    assert summary["build_rate"] == 0.0 and summary["statuses"] == {"compile_error": 6}
    assert summary["fast_1"] == 0.0 and summary["task_accuracy"] == 0.0
    levels = {json.loads(r)["level"] for r in rows}
    assert sum(summary[f"level_{lv}"]["tasks"] for lv in levels) == 3
    lines = [json.loads(x) for x in (tmp_path / "eval" / "eval.jsonl").read_text().splitlines()]
    assert sorted({x["name"] for x in lines}) == sorted(json.loads(r)["id"] for r in rows)
    # Greedy decoding: a task's two candidates are the same text.
    by_task = {}
    for x in lines:
        by_task.setdefault(x["name"], []).append(x["candidate"])
    assert all(len(c) == 2 and c[0] == c[1] for c in by_task.values())
    assert not list((tmp_path / "eval").glob("step-*"))  # nothing saved
    assert metrics(tmp_path / "eval")[0]["stage"] == "eval-e2e"
