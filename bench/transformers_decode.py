"""Block-diffusion decoding on transformers' eager Qwen3 stack: the baseline
that dice-bench's numbers are compared with.

The same loop as dice's BlockDiffusionSampler in the evaluation setting
(block 4, 4 denoising steps, low_confidence_static, top_k 1): prefill the
prompt block-causally, then per block 4 denoising forwards of the block at
batch N over the cache (the block's KV is cropped off again) and one forward
that stores it. Random weights in the SDAR shapes, bf16, on the GPU.

    python bench/transformers_decode.py --cases 8b:1,8b:16 --new-tokens 32 \
        --json hf.json --dice-json dice.json
"""

import argparse
import json
import sys
import time

import torch
from transformers import Qwen3Config, Qwen3ForCausalLM
from transformers.cache_utils import DynamicCache

# SDAR-{4B,8B}-Chat's config.json; 1.7B follows Qwen3-1.7B.
SHAPES = {
    "1.7b": dict(num_hidden_layers=28, hidden_size=2048, intermediate_size=6144,
                 num_attention_heads=16),
    "4b": dict(num_hidden_layers=36, hidden_size=2560, intermediate_size=9728,
               num_attention_heads=32),
    "8b": dict(num_hidden_layers=36, hidden_size=4096, intermediate_size=12288,
               num_attention_heads=32),
}
MASK_ID = 151669
BLOCK, STEPS = 4, 4


def build_model(shape, attn):
    config = Qwen3Config(vocab_size=151936, num_key_value_heads=8, head_dim=128,
                         rope_theta=1e6, rms_norm_eps=1e-6, tie_word_embeddings=False,
                         max_position_embeddings=32768, attention_bias=False,
                         **SHAPES[shape])
    config._attn_implementation = attn
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = Qwen3ForCausalLM(config)
    torch.set_default_dtype(torch.float32)
    return model.eval()


def block_causal_mask(length, dtype):
    """[1, 1, T, T] additive mask: query i sees key j iff j's block <= i's."""
    blocks = torch.arange(length, device="cuda") // BLOCK
    visible = blocks[None, :] <= blocks[:, None]
    mask = torch.zeros(length, length, device="cuda", dtype=dtype)
    mask[~visible] = torch.finfo(dtype).min
    return mask[None, None]


def crop(cache, length):
    """Drops the cache's entries past `length` (a negative count: the form
    every transformers version since 4.38 accepts)."""
    cache.crop(length - cache.get_seq_length())


def sample_static(logits, masked, count):
    """top_k 1, temperature 1: x0 and its probability per position, then the
    `count` most confident masked positions (ties to the left)."""
    logits = logits.float()
    kth = logits.topk(1, dim=-1).values[..., -1:]
    logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, -1)
    x0 = torch.multinomial(probs.view(-1, probs.size(-1)), 1).view(probs.shape[:-1])
    conf = probs.gather(-1, x0.unsqueeze(-1)).squeeze(-1)
    conf = conf.masked_fill(~masked, float("-inf"))
    order = conf.sort(dim=1, descending=True, stable=True).indices[:, :count]
    chosen = torch.zeros_like(masked).scatter_(1, order, True) & masked
    return x0, chosen


@torch.no_grad()
def decode(model, batch, prompt_length, new_tokens):
    """Returns (prefill seconds, decode seconds, forwards)."""
    dtype = next(model.parameters()).dtype
    prompt = torch.randint(0, 151000, (1, prompt_length), device="cuda")
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    cache = DynamicCache()
    model(input_ids=prompt, attention_mask=block_causal_mask(prompt_length, dtype),
          position_ids=torch.arange(prompt_length, device="cuda")[None],
          past_key_values=cache, use_cache=True)
    if batch > 1:
        cache.batch_repeat_interleave(batch)
    torch.cuda.synchronize()
    t1 = time.perf_counter()

    length, forwards = prompt_length, 0
    for _ in range(new_tokens // BLOCK):
        x = torch.full((batch, BLOCK), MASK_ID, device="cuda")
        positions = torch.arange(length, length + BLOCK, device="cuda").expand(batch, -1)
        # The block sees the whole cache and itself: an all-zero 4-D mask.
        mask = torch.zeros(1, 1, BLOCK, length + BLOCK, device="cuda", dtype=dtype)
        for _ in range(STEPS):
            logits = model(input_ids=x, attention_mask=mask, position_ids=positions,
                           past_key_values=cache, use_cache=True).logits
            crop(cache, length)
            forwards += 1
            x0, chosen = sample_static(logits, x == MASK_ID, BLOCK // STEPS)
            x = torch.where(chosen, x0, x)
        model(input_ids=x, attention_mask=mask, position_ids=positions,
              past_key_values=cache, use_cache=True)
        forwards += 1
        length += BLOCK
    torch.cuda.synchronize()
    return t1 - t0, time.perf_counter() - t1, forwards


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="8b:1,8b:16")
    parser.add_argument("--prompt", type=int, default=512)
    parser.add_argument("--new-tokens", type=int, default=32,
                        help="tokens per candidate (fewer than dice-bench's: eager is slow)")
    parser.add_argument("--attn", default="eager", help="transformers attention implementation")
    parser.add_argument("--json")
    parser.add_argument("--dice-json", help="dice-bench results to compare with")
    args = parser.parse_args()

    dice = {}
    if args.dice_json:
        for row in json.load(open(args.dice_json))["cases"]:
            if row["mode"] == "static":
                dice[(row["shape"], row["batch"])] = row

    import transformers
    results = {"transformers_version": transformers.__version__,
               "torch_version": torch.__version__, "attn": args.attn, "cases": []}
    model, loaded = None, None
    for case in args.cases.split(","):
        shape, batch = case.split(":")
        batch = int(batch)
        if shape != loaded:
            model = None
            torch.cuda.empty_cache()
            model, loaded = build_model(shape, args.attn), shape
            decode(model, 1, args.prompt, 2 * BLOCK)  # warm-up
        print(f"transformers {shape} b{batch}: decoding {args.new_tokens} tokens...",
              file=sys.stderr, flush=True)
        prefill, seconds, forwards = decode(model, batch, args.prompt, args.new_tokens)
        row = {"shape": shape, "batch": batch, "tokens_per_s": batch * args.new_tokens / seconds,
               "ms_per_forward": seconds * 1e3 / forwards, "forwards": forwards,
               "prefill_ms": prefill * 1e3, "decode_seconds": seconds}
        if (shape, batch) in dice:
            row["dice_tokens_per_s"] = dice[(shape, batch)]["tokens_per_s"]
            row["dice_speedup"] = row["dice_tokens_per_s"] / row["tokens_per_s"]
        results["cases"].append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
        if args.json:
            with open(args.json, "w") as out:
                json.dump(results, out, indent=2)

    print("\n| model | batch | transformers tok/s | ms/forward | dice tok/s | speedup |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in results["cases"]:
        print(f"| {r['shape']} | {r['batch']} | {r['tokens_per_s']:.1f} | "
              f"{r['ms_per_forward']:.1f} | {r.get('dice_tokens_per_s', float('nan')):.1f} | "
              f"{r.get('dice_speedup', float('nan')):.1f}x |")


if __name__ == "__main__":
    main()
