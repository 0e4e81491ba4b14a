"""Write a tiny random decoder checkpoint in Hugging Face layout.

The model runtime's tests load it from C++ and from transformers and compare
logits, so it has every feature of a real checkpoint of its family (GQA,
untied or tied head, block_size, mask token, stop ids; q/k norms in
SDAR/Qwen3, q/k/v biases in Qwen2, attention biases in a Llama with
`attention_bias`) at a size a CPU runs in milliseconds:

    python -m dice.tiny_checkpoint OUT_DIR [--dtype bfloat16] [--shards 2]
        [--family sdar|qwen2|llama]

With ``--tokenizer`` the vocabulary is the real one (151936 ids) and the
tokenizer files are copied from $DICE_SDAR_DIR, so the whole engine runs.
With ``--byte-tokenizer`` the vocabulary is a byte-level BPE with no merges
(256 bytes and the four special tokens of SDAR): a real tokenizer folder of
260 ids, for training tests that need text in and out but no large vocabulary.
"""

import argparse
import json
import os
import shutil
from pathlib import Path

import torch
from safetensors.torch import save_file

SDAR_VOCAB = 151936
SDAR_MASK, SDAR_STOPS = 151669, [151645, 151643]
TOKENIZER_FILES = ["vocab.json", "merges.txt", "tokenizer_config.json",
                   "added_tokens.json", "special_tokens_map.json",
                   "chat_template.jinja"]


ARCHITECTURES = {"sdar": "SDARForCausalLM", "qwen2": "Qwen2ForCausalLM",
                 "llama": "LlamaForCausalLM"}


def tiny_config(vocab_size=320, hidden_size=64, intermediate_size=96,
                num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, head_dim=32, block_size=4,
                tie_word_embeddings=False, dtype="bfloat16", family="sdar",
                attention_bias=False):
    """config.json of `family` (model_type sdar, qwen2 or llama), tiny
    sizes. `attention_bias` is SDAR's and Llama's key (Qwen2 always has q/k/v
    biases)."""
    full_vocab = vocab_size == SDAR_VOCAB
    mask = SDAR_MASK if full_vocab else vocab_size - 1
    stops = SDAR_STOPS if full_vocab else [vocab_size - 3, vocab_size - 2]
    return {
        "architectures": [ARCHITECTURES[family]],
        "model_type": family,
        **({} if family == "qwen2" else {"attention_bias": attention_bias}),
        "hidden_act": "silu",
        "hidden_size": hidden_size,
        "intermediate_size": intermediate_size,
        "num_hidden_layers": num_hidden_layers,
        "num_attention_heads": num_attention_heads,
        "num_key_value_heads": num_key_value_heads,
        "head_dim": head_dim,
        "max_position_embeddings": 4096,
        "rms_norm_eps": 1e-6,
        "rope_theta": 1000000,
        "rope_scaling": None,
        "vocab_size": vocab_size,
        "block_size": block_size,
        "mask_token_id": mask,
        "bos_token_id": stops[1],
        "eos_token_id": stops[1],
        "tie_word_embeddings": tie_word_embeddings,
        "torch_dtype": dtype,
    }


BYTE_SPECIAL_TOKENS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|MASK|>"]
BYTE_VOCAB = 256 + len(BYTE_SPECIAL_TOKENS)


def byte_level_alphabet():
    """GPT-2's printable stand-in for each byte (the spelling vocab.json uses)."""
    printable = list(range(ord("!"), ord("~") + 1)) + \
        list(range(ord("\xa1"), ord("\xac") + 1)) + list(range(ord("\xae"), ord("\xff") + 1))
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


def write_byte_tokenizer(out):
    """vocab.json, merges.txt and the added tokens of a merge-free byte-level
    BPE; the special tokens follow the bytes, so with vocab_size 260 the mask
    is the last id and the stops (<|im_end|>, <|endoftext|>) the two before."""
    alphabet = byte_level_alphabet()
    vocab = {alphabet[b]: b for b in range(256)}
    (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    (out / "merges.txt").write_text("#version: 0.2\n")
    added = {str(256 + k): {"content": t, "lstrip": False, "normalized": False,
                            "rstrip": False, "single_word": False, "special": True}
             for k, t in enumerate(BYTE_SPECIAL_TOKENS)}
    (out / "tokenizer_config.json").write_text(json.dumps({
        "added_tokens_decoder": added, "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>", "model_max_length": 4096,
        "tokenizer_class": "Qwen2Tokenizer", "clean_up_tokenization_spaces": False,
        "errors": "replace", "split_special_tokens": False}, indent=2))
    (out / "added_tokens.json").write_text(json.dumps(
        {t: 256 + k for k, t in enumerate(BYTE_SPECIAL_TOKENS)}, indent=2))


def random_state_dict(config, seed=0):
    """Weights named as in Hugging Face checkpoints of the config's family,
    fp32.

    Scales are chosen so that logits are far from uniform, and biases are
    not zero: numerics tests then compare something that depends on every
    weight.
    """
    g = torch.Generator().manual_seed(seed)
    h, i = config["hidden_size"], config["intermediate_size"]
    d, v = config["head_dim"], config["vocab_size"]
    q, kv = config["num_attention_heads"] * d, config["num_key_value_heads"] * d

    def linear(out_features, in_features):
        return torch.randn(out_features, in_features, generator=g) / in_features ** 0.5

    def norm(size):
        return 1.0 + 0.2 * torch.randn(size, generator=g)

    def bias(size):
        return 0.5 * torch.randn(size, generator=g)

    family = config["model_type"]
    qkv_bias = family == "qwen2" or config.get("attention_bias", False)
    output_bias = family != "qwen2" and config.get("attention_bias", False)
    tensors = {"model.embed_tokens.weight": torch.randn(v, h, generator=g),
               "model.norm.weight": norm(h)}
    for layer in range(config["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        tensors.update({
            p + "input_layernorm.weight": norm(h),
            p + "self_attn.q_proj.weight": linear(q, h),
            p + "self_attn.k_proj.weight": linear(kv, h),
            p + "self_attn.v_proj.weight": linear(kv, h),
            p + "self_attn.o_proj.weight": linear(h, q)})
        if qkv_bias:
            tensors.update({p + "self_attn.q_proj.bias": bias(q),
                            p + "self_attn.k_proj.bias": bias(kv),
                            p + "self_attn.v_proj.bias": bias(kv)})
        if output_bias:
            tensors[p + "self_attn.o_proj.bias"] = bias(h)
        if family == "sdar":
            tensors.update({p + "self_attn.q_norm.weight": norm(d),
                            p + "self_attn.k_norm.weight": norm(d)})
        tensors.update({
            p + "post_attention_layernorm.weight": norm(h),
            p + "mlp.gate_proj.weight": linear(i, h),
            p + "mlp.up_proj.weight": linear(i, h),
            p + "mlp.down_proj.weight": linear(h, i),
        })
    if not config["tie_word_embeddings"]:
        tensors["lm_head.weight"] = linear(v, h) * 4.0
    return tensors


def write_tiny_checkpoint(out_dir, dtype="bfloat16", shards=1, seed=0,
                          tokenizer=False, byte_tokenizer=False, **sizes):
    """Writes config.json, generation_config.json and the safetensors (one
    file, or `shards` files and model.safetensors.index.json). Returns the
    config dict."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if tokenizer:
        sizes["vocab_size"] = SDAR_VOCAB
    if byte_tokenizer:
        sizes["vocab_size"] = BYTE_VOCAB
        write_byte_tokenizer(out)
    config = tiny_config(dtype=dtype, **sizes)
    (out / "config.json").write_text(json.dumps(config, indent=2))
    stops = SDAR_STOPS if config["vocab_size"] == SDAR_VOCAB else \
        [config["vocab_size"] - 3, config["vocab_size"] - 2]
    (out / "generation_config.json").write_text(json.dumps(
        {"bos_token_id": stops[1], "eos_token_id": stops,
         "pad_token_id": stops[1]}, indent=2))

    torch_dtype = getattr(torch, dtype)
    tensors = {k: t.to(torch_dtype).contiguous()
               for k, t in random_state_dict(config, seed).items()}
    if shards <= 1:
        save_file(tensors, str(out / "model.safetensors"),
                  metadata={"format": "pt"})
    else:
        names = sorted(tensors)
        weight_map = {}
        for s in range(shards):
            file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
            part = {k: tensors[k] for k in names[s::shards]}
            save_file(part, str(out / file), metadata={"format": "pt"})
            weight_map.update({k: file for k in part})
        total = sum(t.numel() * t.element_size() for t in tensors.values())
        (out / "model.safetensors.index.json").write_text(json.dumps(
            {"metadata": {"total_size": total}, "weight_map": weight_map},
            indent=2))

    if tokenizer:
        sdar = os.environ.get("DICE_SDAR_DIR")
        if not sdar:
            raise RuntimeError("--tokenizer needs DICE_SDAR_DIR (the folder "
                               "with vocab.json, merges.txt, ...)")
        for name in TOKENIZER_FILES:
            if (Path(sdar) / name).exists():
                shutil.copy(Path(sdar) / name, out / name)
    return config


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--dtype", default="bfloat16",
                        choices=["float32", "float16", "bfloat16"])
    parser.add_argument("--shards", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tie", action="store_true",
                        help="tie_word_embeddings: no lm_head.weight")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--tokenizer", action="store_true",
                        help="real vocabulary; copy tokenizer files from "
                             "$DICE_SDAR_DIR")
    parser.add_argument("--byte-tokenizer", action="store_true",
                        help="a 260-id byte-level tokenizer written beside it")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--family", default="sdar", choices=sorted(ARCHITECTURES))
    parser.add_argument("--attention-bias", action="store_true",
                        help="attention_bias (sdar, llama): biased projections")
    args = parser.parse_args()
    write_tiny_checkpoint(args.out_dir, dtype=args.dtype, shards=args.shards,
                          seed=args.seed, tokenizer=args.tokenizer,
                          byte_tokenizer=args.byte_tokenizer, hidden_size=args.hidden,
                          tie_word_embeddings=args.tie,
                          num_hidden_layers=args.layers, family=args.family,
                          attention_bias=args.attention_bias)


if __name__ == "__main__":
    main()
