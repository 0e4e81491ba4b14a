"""The corpus generator: a catalogue wide enough to train on, solutions with
the request's exact signature that pass the verifier's static analysis and
build with nvcc, committed data that is what the generator writes, and
held-out families that never occur in train or val."""

import re
import shutil
from pathlib import Path

import pytest

from build_tree import BIN, SOURCE_ROOT
from dice.corpus.catalogue import HELDOUT, catalogue
from dice.corpus.check import verify
from dice.corpus.cuda_common import definition_head
from dice.corpus.elementwise import UNARY
from dice.corpus.generate import SPLITS, generate, read_jsonl

DATA = SOURCE_ROOT / "train" / "data"
ROW_FIELDS = ["id", "pytorch_code", "cuda_code", "level", "prefix", "middle", "suffix",
              "family", "fingerprint", "signature", "program", "reference"]
NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
DICE_VERIFY = BIN / "dice-verify"
needs_verify = pytest.mark.skipif(not DICE_VERIFY.exists(), reason="dice-verify is not built")

# What the static analysis would call torch compute: the work must be the kernels'.
ATEN_COMPUTE = re.compile(r"\b(?:torch|at)::(?!empty|Half|BFloat16|kLong|kFloat|kHalf|kBFloat16"
                          r"|Tensor\b)\w+\s*\(|\.(?:sum|mean|matmul|add|mul|relu|exp|softmax)\(")


def fake_signature(spec):
    forward = spec.pytorch_code.split("def forward(self, ")[1].split(")")[0]
    n = len(forward.split(","))
    return "torch::Tensor dice_forward(" + ", ".join(
        f"torch::Tensor x{i}" for i in range(n)) + ");"


@pytest.fixture(scope="module")
def specs():
    return list(catalogue(seed=0))


@pytest.fixture(scope="module")
def data():
    return {split: read_jsonl(DATA / f"corpus-{split}.jsonl") for split in SPLITS}


def test_the_catalogue_is_wide(specs):
    families = {s.family for s in specs}
    assert len(UNARY) >= 30
    assert set(UNARY) <= families
    for family in ("binary_add", "binary_div", "binary_maximum", "chain", "reduce_sum",
                   "reduce_mean", "reduce_amax", "reduce_prod", "reduce_l2_norm", "softmax",
                   "log_softmax", "layer_norm", "rms_norm", "matmul", "gemm_bias_act",
                   "transpose", "reduce_argmax", "reduce_argmin", "max_pool2d", "avg_pool2d"):
        assert family in families, family
    assert HELDOUT <= families
    assert {s.level for s in specs} == {1, 2}
    dtypes = {d for s in specs for d in ("float32", "float16", "bfloat16") if d in s.pytorch_code}
    assert dtypes == {"float32", "float16", "bfloat16"}


def test_every_solution_is_a_kernel_behind_the_signature(specs):
    for spec in specs:
        signature = fake_signature(spec)
        source = spec.solve(signature)
        where = f"{spec.family}: {spec.pytorch_code.splitlines()[5]}"
        assert source.startswith("#include <torch/extension.h>"), where
        assert "__global__" in source and "<<<" in source, where
        assert definition_head(signature) + " {" in source, where
        assert "c10::cuda::getCurrentCUDAStream()" in source, where
        assert 'TORCH_CHECK(x0.is_contiguous(), "x0 must be contiguous")' in source, where
        assert "torch::empty" in source, where
        assert "\\" not in source and '"""' not in source, where
        assert not ATEN_COMPUTE.search(source), (where, ATEN_COMPUTE.search(source))


def test_committed_rows_are_whole_programs(data):
    ids = set()
    for split, rows in data.items():
        assert rows, split
        for row in rows:
            assert list(row) == ROW_FIELDS
            assert row["id"] not in ids
            ids.add(row["id"])
            assert row["cuda_code"] == row["prefix"] + row["middle"] + row["suffix"]
            assert row["middle"].startswith('source = """\n#include <torch/extension.h>')
            assert row["middle"].endswith('"""')
            assert definition_head(row["signature"]) + " {" in row["middle"]
            assert row["signature"] in row["suffix"] and "class ModelNew" in row["suffix"]
            # What the compiler's prompts show: a printed program, no user names.
            assert "class Model(nn.Module)" in row["reference"]
            assert "def forward(self, x0" in row["reference"]
            assert row["level"] in (1, 2)
            assert len(row["program"]["inputs"]) == row["signature"].count("torch::Tensor x")
    total = sum(p.stat().st_size for p in DATA.glob("*.jsonl"))
    assert total < 9e6


def test_held_out_families_never_occur_in_train_or_val(data):
    seen = {split: {row["family"] for row in rows} for split, rows in data.items()}
    assert seen["heldout"] == HELDOUT
    assert not HELDOUT & (seen["train"] | seen["val"])
    fingerprints = [row["fingerprint"] for rows in data.values() for row in rows]
    assert len(fingerprints) == len(set(fingerprints))


def test_tasks_and_packs_follow_the_corpus(data):
    for split, rows in data.items():
        tasks = read_jsonl(DATA / f"tasks-{split}.jsonl")
        packs = read_jsonl(DATA / f"packs-{split}.jsonl")
        assert [t["id"] for t in tasks] == [p["id"] for p in packs] == [r["id"] for r in rows]
        for row, task, pack in zip(rows, tasks, packs):
            assert task == {"id": row["id"], "level": row["level"],
                            "pytorch_code": row["pytorch_code"]}
            assert (pack["fingerprint"], pack["signature"], pack["prefix"], pack["suffix"]) == \
                (row["fingerprint"], row["signature"], row["prefix"], row["suffix"])


def test_the_generator_writes_the_committed_rows(data, tmp_path):
    written = generate(tmp_path, seed=0, limit=2, log=open("/dev/null", "w"))
    committed = {row["id"]: row for rows in data.values() for row in rows}
    fresh = [row for rows in written.values() for row in rows]
    assert fresh
    for row in fresh:
        assert row == committed[row["id"]]


def template_group(family):
    """Families that share a CUDA template share a group."""
    if family in UNARY:
        return "unary"
    if family.startswith("reduce_arg"):
        return "reduce_arg"
    if family.endswith("_pool2d"):
        return "pool2d"
    return family.split("_")[0] if family.startswith(("binary_", "reduce_")) else family


def sample(data):
    """One row per template group and storage dtype, so every template and
    every storage type is analysed; `dice corpus check` does every row."""
    chosen = {}
    for rows in data.values():
        for row in rows:
            dtype = row["program"]["inputs"][0]["dtype"]
            chosen.setdefault((template_group(row["family"]), dtype), row)
    return list(chosen.values())


@needs_verify
def test_the_static_analysis_accepts_a_sample(data):
    rows = sample(data)
    for row, verdict in zip(rows, verify(rows)):
        assert verdict["status"] == "unverified", (row["id"], verdict)


@needs_verify
@pytest.mark.skipif(not Path(NVCC).exists(), reason="no nvcc")
def test_nvcc_builds_a_low_precision_solution(data, tmp_path):
    row = next(r for r in data["train"] if r["family"] == "layer_norm"
               and r["program"]["inputs"][0]["dtype"] != "float32")
    [verdict] = verify([row], build=True, cache=tmp_path)
    assert verdict["status"] == "unverified", verdict
    assert verdict["compile_ms"] > 0
