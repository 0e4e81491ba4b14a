"""The C++ model runtime against transformers on tiny random checkpoints.

(a) prefill and cached block steps give the logits of transformers'
    Qwen3ForCausalLM run over the whole sequence with the same 4-D
    block-causal mask (fp32, max abs error <= 1e-4), for bf16/fp16/fp32
    files, tied and untied heads, batch 1 and 3; and those of
    Qwen2ForCausalLM and LlamaForCausalLM (with and without attention
    biases) for checkpoints of those families;
(b) a block step leaves no KV behind, and storing a block gives the same
    logits as the step;
(c) sharded and single-file checkpoints give identical logits;
(d) greedy static block-diffusion decoding matches a reference decoder
    written here on top of transformers, token by token.
"""

import json
import math
import os
import subprocess
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import (LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM,
                          Qwen3Config, Qwen3ForCausalLM)

from build_tree import BUILD_DIR
from dice.tiny_checkpoint import write_tiny_checkpoint

MODEL_CHECK = BUILD_DIR / "bin" / "dice-model-check"
TOLERANCE = 1e-4
# The runtime's device (cpu in CI; cuda on a GPU machine runs the same checks
# through the CUDA-graph decode path against transformers on the CPU).
DEVICE = os.environ.get("DICE_TEST_DEVICE", "cpu")


def torch_enabled():
    cache = BUILD_DIR / "CMakeCache.txt"
    return not cache.exists() or "DICE_ENABLE_TORCH:BOOL=OFF" not in cache.read_text()


pytestmark = pytest.mark.skipif(
    not torch_enabled(), reason="built with DICE_ENABLE_TORCH=OFF: no model runtime"
)


def model_check(*args):
    assert MODEL_CHECK.exists(), f"no dice-model-check at {MODEL_CHECK} (set DICE_BUILD_DIR)"
    if "--device" not in args:
        args = (*args, "--device", DEVICE)
    result = subprocess.run([str(MODEL_CHECK), *map(str, args)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


def cpp_logits(ckpt, ids, tmp_path, **options):
    out = tmp_path / "logits.safetensors"
    args = ["--model", ckpt, "--ids", ",".join(map(str, ids)), "--out", out]
    for key, value in options.items():
        args += [f"--{key}", value]
    model_check(*args)
    return load_file(str(out))


# transformers' own class for each family (SDAR is Qwen3 with block attention).
HF_CLASSES = {"sdar": (Qwen3Config, Qwen3ForCausalLM),
              "qwen2": (Qwen2Config, Qwen2ForCausalLM),
              "llama": (LlamaConfig, LlamaForCausalLM)}


def hf_model(ckpt):
    """transformers' model of the checkpoint's family with its weights, in
    fp32."""
    config = json.loads((Path(ckpt) / "config.json").read_text())
    keys = ["vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
            "num_attention_heads", "num_key_value_heads", "head_dim",
            "rms_norm_eps", "rope_theta", "tie_word_embeddings",
            "max_position_embeddings"]
    config_class, model_class = HF_CLASSES[config["model_type"]]
    extra = {} if config["model_type"] == "qwen2" else \
        {"attention_bias": config["attention_bias"]}
    hf_config = config_class(**{k: config[k] for k in keys}, **extra)
    hf_config._attn_implementation = "eager"
    model = model_class(hf_config).eval()
    state = {}
    for file in Path(ckpt).glob("*.safetensors"):
        state.update(load_file(str(file)))
    state = {k: v.float() for k, v in state.items()}
    if config["tie_word_embeddings"]:
        state["lm_head.weight"] = state["model.embed_tokens.weight"]
    model.load_state_dict(state, strict=True)
    return model


def block_causal_mask(length, block):
    """[1, 1, T, T] additive mask: query i sees key j iff j's block <= i's."""
    blocks = torch.arange(length) // block
    visible = blocks[None, :] <= blocks[:, None]
    mask = torch.zeros(length, length)
    mask[~visible] = torch.finfo(torch.float32).min
    return mask[None, None]


@torch.no_grad()
def hf_logits(model, ids, block):
    """Logits [T, V] of the whole sequence under the block-causal mask."""
    input_ids = torch.tensor([ids])
    out = model(input_ids=input_ids, attention_mask=block_causal_mask(len(ids), block),
                position_ids=torch.arange(len(ids))[None], use_cache=False)
    return out.logits[0]


IDS = [5, 17, 42, 99, 3, 250, 7, 64, 128, 11, 200, 33, 8]  # 13: two blocks + a tail


@pytest.mark.parametrize(
    "dtype,tie,prefill,batch",
    [("float32", False, 8, 1), ("bfloat16", False, 8, 1), ("float16", False, 4, 1),
     ("bfloat16", True, 8, 1), ("bfloat16", False, 0, 1), ("float32", False, 8, 3)],
)
def test_logits_match_transformers(tmp_path, dtype, tie, prefill, batch):
    ckpt = tmp_path / "ckpt"
    write_tiny_checkpoint(ckpt, dtype=dtype, tie_word_embeddings=tie)
    ours = cpp_logits(ckpt, IDS, tmp_path, prefill=prefill, batch=batch)
    reference = hf_logits(hf_model(ckpt), IDS, block=4)

    assert ours["logits"].shape == reference.shape
    error = (ours["logits"] - reference).abs().max().item()
    print(f"{dtype} tie={tie} prefill={prefill} batch={batch}: "
          f"max abs error {error:.3g} (logits up to {reference.abs().max():.3g})")
    assert error <= TOLERANCE
    # Storing a block is the same forward as the step before it.
    step_logits = ours["logits"][prefill:]
    assert (ours["store_logits"] - step_logits).abs().max().item() <= 1e-5


@pytest.mark.parametrize(
    "family,attention_bias,dtype,tie",
    [("qwen2", False, "float32", False), ("qwen2", False, "bfloat16", True),
     ("llama", False, "float32", False), ("llama", True, "bfloat16", False),
     ("sdar", True, "float32", False)],
)
def test_every_family_matches_transformers(tmp_path, family, attention_bias, dtype, tie):
    ckpt = tmp_path / "ckpt"
    write_tiny_checkpoint(ckpt, dtype=dtype, tie_word_embeddings=tie, family=family,
                          attention_bias=attention_bias)
    ours = cpp_logits(ckpt, IDS, tmp_path, prefill=8, batch=2)
    reference = hf_logits(hf_model(ckpt), IDS, block=4)
    error = (ours["logits"] - reference).abs().max().item()
    print(f"{family} bias={attention_bias} {dtype} tie={tie}: max abs error {error:.3g}")
    assert error <= TOLERANCE
    # The biases count: the same checkpoint without them gives other logits.
    state = {}
    for file in ckpt.glob("*.safetensors"):
        state.update(load_file(str(file)))
    assert any(name.endswith(".bias") for name in state) == \
        (family == "qwen2" or attention_bias)
    assert (ours["store_logits"] - ours["logits"][8:]).abs().max().item() <= 1e-5


def test_a_feature_the_decoder_does_not_compute_is_an_error(tmp_path):
    ckpt = tmp_path / "ckpt"
    write_tiny_checkpoint(ckpt, dtype="float32", family="llama")
    config = json.loads((ckpt / "config.json").read_text())
    for key, value, words in [("rope_scaling", {"rope_type": "llama3", "factor": 8.0},
                               "rope_scaling"),
                              ("hidden_act", "gelu", "hidden_act"),
                              ("mlp_bias", True, "mlp_bias"),
                              ("model_type", "mistral3", "mistral3")]:
        (ckpt / "config.json").write_text(json.dumps({**config, key: value}))
        result = subprocess.run([str(MODEL_CHECK), "--model", str(ckpt), "--ids", "1,2",
                                 "--out", str(tmp_path / "x.safetensors")],
                                capture_output=True, text=True, timeout=300)
        assert result.returncode != 0
        assert "config.json" in result.stderr and words in result.stderr, result.stderr


def test_block_size_comes_from_the_option(tmp_path):
    ckpt = tmp_path / "ckpt"
    write_tiny_checkpoint(ckpt, dtype="float32")
    ours = cpp_logits(ckpt, IDS, tmp_path, prefill=6, block=3)
    reference = hf_logits(hf_model(ckpt), IDS, block=3)
    assert (ours["logits"] - reference).abs().max().item() <= TOLERANCE


def test_sharded_checkpoint_gives_identical_logits(tmp_path):
    single, sharded = tmp_path / "single", tmp_path / "sharded"
    write_tiny_checkpoint(single, dtype="bfloat16", seed=3)
    write_tiny_checkpoint(sharded, dtype="bfloat16", seed=3, shards=3)
    assert (sharded / "model.safetensors.index.json").exists()
    a = cpp_logits(single, IDS, tmp_path)["logits"]
    b = cpp_logits(sharded, IDS, tmp_path)["logits"]
    assert torch.equal(a, b)


def reference_greedy_decode(model, prompt, block, steps, max_tokens, mask_id, stops):
    """SDAR's block-diffusion decoding (low_confidence_static, greedy) on
    full forwards without a cache: unmask the most confident masked
    positions, block/steps per step, leftmost first on ties."""
    schedule = [block // steps + (1 if s < block % steps else 0) for s in range(steps)]
    prefilled = len(prompt) // block * block
    tail = len(prompt) - prefilled
    blocks = math.ceil((tail + max_tokens) / block)
    x = list(prompt) + [mask_id] * (blocks * block - tail)
    step_of = {}
    step_count = 0
    for k in range(blocks):
        start = prefilled + k * block
        for s in range(steps):
            masked = [i for i in range(start, start + block) if x[i] == mask_id]
            if not masked:
                break
            logits = hf_logits(model, x[: start + block], block)[start:]
            probs = torch.softmax(logits, -1)
            conf, x0 = probs.max(-1)
            order = sorted(masked, key=lambda i: (-conf[i - start].item(), i))
            for i in order[: schedule[s]]:
                x[i] = x0[i - start].item()
                step_of[i] = step_count
            step_count += 1
        generated = x[len(prompt): start + block]
        if any(t in stops for t in generated) or len(generated) >= max_tokens:
            break
    answer = x[len(prompt): start + block][:max_tokens]
    for j, token in enumerate(answer):
        if token in stops:
            answer = answer[: j + 1]
            break
    return answer, [step_of[len(prompt) + j] for j in range(len(answer))]


@pytest.mark.parametrize("prompt_length", [8, 10])
def test_greedy_decoding_matches_reference(tmp_path, prompt_length):
    ckpt = tmp_path / "ckpt"
    config = write_tiny_checkpoint(ckpt, dtype="float32", seed=1)
    prompt = IDS[:prompt_length]
    stops = [config["vocab_size"] - 3, config["vocab_size"] - 2]
    out = json.loads(model_check("--model", ckpt, "--ids", ",".join(map(str, prompt)),
                                 "--generate", 2, "--temperature", 0, "--top-k", 0,
                                 "--steps", 2, "--max-tokens", 14))
    tokens, steps = reference_greedy_decode(hf_model(ckpt), prompt, 4, 2, 14,
                                            config["mask_token_id"], stops)
    for candidate in out["candidates"]:
        assert candidate["tokens"] == tokens
        assert candidate["unmask_step"] == steps
        assert all(0 < p <= 1 for p in candidate["probability"])


def test_sampling_is_deterministic_for_a_seed(tmp_path):
    ckpt = tmp_path / "ckpt"
    write_tiny_checkpoint(ckpt, dtype="bfloat16")
    args = ["--model", ckpt, "--ids", "1,2,3,4,5", "--generate", 4, "--top-k", 0,
            "--remasking", "dynamic", "--max-tokens", 24]
    first = json.loads(model_check(*args, "--seed", 7))
    again = json.loads(model_check(*args, "--seed", 7))
    other = json.loads(model_check(*args, "--seed", 8))
    assert first == again
    assert first != other
    tokens = [c["tokens"] for c in first["candidates"]]
    assert len({tuple(t) for t in tokens}) > 1, "candidates of a batch should differ"


def write_byte_tokenizer(folder, config):
    """A byte-level BPE folder without merges: ids 0..255 are the bytes, and
    the checkpoint's stop and mask ids are added tokens."""
    # Byte-level BPE spells printable Latin-1 bytes as themselves and moves
    # the others to U+0100 onwards, in byte order.
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    moved = [b for b in range(256) if b not in printable]
    byte_chars = {b: chr(b) for b in printable}
    byte_chars.update({b: chr(0x100 + k) for k, b in enumerate(moved)})
    vocab = {byte_chars[b]: b for b in range(256)}
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    stop, eos = config["vocab_size"] - 3, config["vocab_size"] - 2
    added = {str(stop): {"content": "<|im_end|>", "special": True},
             str(eos): {"content": "<|endoftext|>", "special": True},
             str(config["mask_token_id"]): {"content": "<|MASK|>", "special": False}}
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"added_tokens_decoder": added, "eos_token": "<|endoftext|>"}))


def test_infill_engine_decodes_the_tokenized_prompt(tmp_path):
    ckpt = tmp_path / "ckpt"
    config = write_tiny_checkpoint(ckpt, dtype="bfloat16", seed=2)
    write_byte_tokenizer(ckpt, config)
    options = ["--generate", 3, "--top-k", 0, "--max-tokens", 12, "--seed", 5]
    engine = json.loads(model_check("--model", ckpt, "--prompt", "hi!", *options))
    direct = json.loads(model_check("--model", ckpt, "--ids", "104,105,33", *options))
    assert len(engine["candidates"]) == 3
    for ours, raw in zip(engine["candidates"], direct["candidates"]):
        assert ours["tokens"] == raw["tokens"]
        assert ours["unmask_step"] == raw["unmask_step"]
        assert isinstance(ours["text"], str)
        assert "<|im_end|>" not in ours["text"]
        printable = bytes(t for t in ours["tokens"] if t < 256 and t >= 32 and t < 127)
        assert all(chr(c) in ours["text"] for c in printable)
