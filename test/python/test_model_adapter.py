"""Adapters over a base, against PEFT itself (the format's own reader and
writer):

(a) an adapter PEFT wrote (LoRA on attention and MLP projections, the mask
    token's rows replaced through `trainable_token_indices`), merged by the
    C++ runtime at load, gives PeftModel's logits, for a tied head (Qwen2)
    and an untied one (SDAR);
(b) the adapter a LoRA run of dice-train writes loads in PEFT over the
    base, and gives the logits of the run's merged checkpoint; its mask row
    trained;
(c) settings that change the adapted model and that the runtime does not
    compute, and an adapter over another base, are errors naming the key.
"""

import json
import subprocess

import pytest
import torch
from peft import LoraConfig, PeftModel, get_peft_model
from safetensors.torch import load_file

from dice.tiny_checkpoint import write_tiny_checkpoint
from test_model_numerics import MODEL_CHECK, TOLERANCE, cpp_logits, hf_logits, hf_model
from test_train import torch_enabled, train, write_run

pytestmark = pytest.mark.skipif(
    not torch_enabled(), reason="built with DICE_ENABLE_TORCH=OFF: no model runtime")

IDS = [5, 17, 42, 99, 3, 250, 7, 64, 128, 11, 200, 33, 8]


def peft_adapter(ckpt, folder, seed=0):
    """PEFT's adapter over `ckpt` with random (non-zero) updates, saved to
    `folder`; returns the PeftModel."""
    config = json.loads((ckpt / "config.json").read_text())
    mask = config["mask_token_id"]
    rows = [mask] if config["tie_word_embeddings"] else \
        {"embed_tokens": [mask], "lm_head": [mask]}
    model = get_peft_model(hf_model(ckpt), LoraConfig(
        r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "o_proj", "up_proj", "down_proj"],
        trainable_token_indices=rows))
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name or "trainable_tokens_delta" in name:
                p.copy_(torch.randn(p.shape, generator=generator) * 0.3)
    model.save_pretrained(folder)
    return model.eval()


@pytest.mark.parametrize("family,tie", [("qwen2", True), ("sdar", False)])
def test_a_peft_adapter_merged_at_load_gives_peft_logits(tmp_path, family, tie):
    ckpt = tmp_path / "base"
    write_tiny_checkpoint(ckpt, dtype="float32", family=family, tie_word_embeddings=tie)
    model = peft_adapter(ckpt, tmp_path / "adapter")
    mask = json.loads((ckpt / "config.json").read_text())["mask_token_id"]
    ids = IDS[:4] + [mask] * 4 + IDS[4:]  # the replaced row is read and written
    reference = hf_logits(model, ids, block=4)
    base = hf_logits(hf_model(ckpt), ids, block=4)
    ours = cpp_logits(ckpt, ids, tmp_path, adapter=tmp_path / "adapter", prefill=8)["logits"]
    error = (ours - reference).abs().max().item()
    print(f"{family}: max abs error {error:.3g}; the adapter moves logits by "
          f"{(reference - base).abs().max().item():.3g}")
    assert error <= TOLERANCE
    assert (reference - base).abs().max().item() > 100 * TOLERANCE


def test_dice_train_writes_an_adapter_peft_reads(tmp_path):
    config = write_run(tmp_path, steps=4, lora={"rank": 4, "alpha": 8,
                                                "targets": '["q_proj", "k_proj", "down_proj"]'})
    train(config)
    checkpoint = tmp_path / "run" / "step-000004"
    adapter = checkpoint / "adapter"
    settings = json.loads((adapter / "adapter_config.json").read_text())
    base_config = json.loads((tmp_path / "model" / "config.json").read_text())
    mask = base_config["mask_token_id"]
    assert settings["r"] == 4 and settings["target_modules"] == ["q_proj", "k_proj", "down_proj"]
    # The mask row trained (the tiny base's head is untied: both rows).
    tensors = load_file(str(adapter / "adapter_model.safetensors"))
    base = hf_model(tmp_path / "model")
    rows = tensors["base_model.model.model.embed_tokens.token_adapter.trainable_tokens_delta"]
    assert not torch.allclose(rows[0], base.model.embed_tokens.weight[mask])

    adapted = PeftModel.from_pretrained(hf_model(tmp_path / "model"), adapter).eval()
    ids = [72, 105, mask, mask, 10, 11, 40, 41, 97, 98, 99, 257, 5]
    reference = hf_logits(adapted, ids, block=4)
    merged = hf_logits(hf_model(checkpoint), ids, block=4)
    assert (reference - merged).abs().max().item() <= TOLERANCE
    ours = cpp_logits(tmp_path / "model", ids, tmp_path, adapter=adapter)["logits"]
    assert (ours - reference).abs().max().item() <= TOLERANCE


def test_what_the_runtime_does_not_compute_is_an_error(tmp_path):
    ckpt = tmp_path / "base"
    write_tiny_checkpoint(ckpt, dtype="float32", family="qwen2", tie_word_embeddings=True)
    peft_adapter(ckpt, tmp_path / "adapter")
    settings_file = tmp_path / "adapter" / "adapter_config.json"
    settings = json.loads(settings_file.read_text())

    def refused(words, base=ckpt):
        result = subprocess.run([str(MODEL_CHECK), "--model", str(base), "--adapter",
                                 str(tmp_path / "adapter"), "--ids", "1,2",
                                 "--out", str(tmp_path / "x.safetensors")],
                                capture_output=True, text=True, timeout=300)
        assert result.returncode != 0
        for w in words:
            assert w in result.stderr, result.stderr

    for key, value in [("use_dora", True), ("bias", "all"),
                       ("target_modules", "q_proj|v_proj"),
                       ("target_modules", ["q_proj", "lm_head"]),
                       ("rank_pattern", {"q_proj": 8}),
                       ("layers_to_transform", [0]),
                       ("modules_to_save", ["lm_head"])]:
        settings_file.write_text(json.dumps({**settings, key: value}))
        refused(["adapter_config.json", key])
    settings_file.write_text(json.dumps(settings))
    # Over a base of other shapes: the first tensor that does not fit.
    other = tmp_path / "other"
    write_tiny_checkpoint(other, dtype="float32", family="qwen2", tie_word_embeddings=True,
                          intermediate_size=128)
    refused(["adapter_model.safetensors", "lora_", "shape"], base=other)
