"""Writes a random SDAR-8B-shaped bf16 checkpoint in the Hugging Face layout
(config.json, sharded model-*.safetensors and their index), for timing
Transformer::load. Values are drawn on the GPU: drawing 8B of them on the
CPU would take longer than the load being measured.

    PYTHONPATH=python python bench/write_random_checkpoint.py /tmp/ckpt-8b
"""

import json
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file

from dice.tiny_checkpoint import tiny_config

SDAR_8B = dict(vocab_size=151936, hidden_size=4096, intermediate_size=12288,
               num_hidden_layers=36, num_attention_heads=32, num_key_value_heads=8,
               head_dim=128)


def tensor_shapes(c):
    h, d, i = c["hidden_size"], c["head_dim"], c["intermediate_size"]
    q, kv = c["num_attention_heads"] * d, c["num_key_value_heads"] * d
    shapes = {"model.embed_tokens.weight": (c["vocab_size"], h),
              "model.norm.weight": (h,), "lm_head.weight": (c["vocab_size"], h)}
    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        shapes.update({
            p + "input_layernorm.weight": (h,), p + "post_attention_layernorm.weight": (h,),
            p + "self_attn.q_proj.weight": (q, h), p + "self_attn.k_proj.weight": (kv, h),
            p + "self_attn.v_proj.weight": (kv, h), p + "self_attn.o_proj.weight": (h, q),
            p + "self_attn.q_norm.weight": (d,), p + "self_attn.k_norm.weight": (d,),
            p + "mlp.gate_proj.weight": (i, h), p + "mlp.up_proj.weight": (i, h),
            p + "mlp.down_proj.weight": (h, i)})
    return shapes


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    config = tiny_config(**SDAR_8B)
    (out / "config.json").write_text(json.dumps(config, indent=2))
    shapes = tensor_shapes(config)
    names = list(shapes)
    shards = 4
    per_shard = (len(names) + shards - 1) // shards
    weight_map, total = {}, 0
    for s in range(shards):
        file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = {}
        for name in names[s * per_shard:(s + 1) * per_shard]:
            t = torch.randn(shapes[name], device="cuda", dtype=torch.bfloat16) * 0.02
            part[name] = t.cpu()
            total += t.numel() * 2
        save_file(part, str(out / file), metadata={"format": "pt"})
        weight_map.update({k: file for k in part})
        print(f"wrote {file}", file=sys.stderr, flush=True)
    (out / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2))


if __name__ == "__main__":
    main()
