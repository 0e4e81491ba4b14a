"""dice-train's SFT step written in plain PyTorch: the baseline of
`dice-bench --train sft`.

transformers' Qwen3ForCausalLM (SDPA attention) in the same SDAR shape with
random weights, fp32 master weights under bf16 autocast, the same BD3-LM
layout (clean sequence, then a noisy copy of the answer's blocks under the
block-diffusion mask) and loss (cross-entropy / t over the masked answer
tokens), torch.optim.AdamW, gradient clipping at 1. Prints tokens/s.

    python bench/train_step_python.py --shape 1.7b --samples 8 --prompt 512 --answer 512
"""

import argparse
import json
import time

import torch
from transformers import Qwen3Config, Qwen3ForCausalLM

from transformers_decode import SHAPES

MASK_ID, BLOCK = 151669, 4


def bd3_row(prompt, answer, generator):
    """ids, positions, blocks, copies, targets, weights of one sample."""
    p, length = len(prompt), len(prompt) + len(answer)
    tokens = torch.cat([prompt, answer])
    t = 1e-3 + (1 - 1e-3) * torch.rand((), generator=generator).item()
    first = p // BLOCK * BLOCK
    noisy = tokens[first:].clone()
    is_answer = torch.arange(first, length) >= p
    masked = is_answer & (torch.rand(length - first, generator=generator) < t)
    targets = torch.full((length - first,), -100)
    targets[masked] = noisy[masked]
    noisy[masked] = MASK_ID
    positions = torch.cat([torch.arange(length), torch.arange(first, length)])
    copies = torch.cat([torch.full((length,), -1), torch.zeros(length - first, dtype=torch.long)])
    ids = torch.cat([tokens, noisy])
    all_targets = torch.cat([torch.full((length,), -100), targets])
    weights = torch.where(all_targets >= 0, 1.0 / t, 0.0)
    return ids, positions, positions // BLOCK, copies, all_targets, weights


def mask_of(blocks, copies):
    """Additive [T, T] mask: clean sees clean blocks up to its own; a noisy
    block sees itself and clean blocks before it."""
    qb, kb, qc, kc = blocks[:, None], blocks[None, :], copies[:, None], copies[None, :]
    clean_q, clean_k = qc == -1, kc == -1
    allowed = (clean_q & clean_k & (kb <= qb)) | (~clean_q & (kc == qc) & (kb == qb)) | \
        (~clean_q & clean_k & (kb < qb))
    mask = torch.zeros(allowed.shape)
    mask[~allowed] = torch.finfo(torch.float32).min
    return mask


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", default="1.7b")
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--prompt", type=int, default=512)
    parser.add_argument("--answer", type=int, default=512)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--json")
    args = parser.parse_args()

    config = Qwen3Config(vocab_size=151936, num_key_value_heads=8, head_dim=128,
                         rope_theta=1e6, rms_norm_eps=1e-6, tie_word_embeddings=False,
                         max_position_embeddings=32768, attention_bias=False,
                         **SHAPES[args.shape])
    config._attn_implementation = "sdpa"
    with torch.device("cuda"):
        model = Qwen3ForCausalLM(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    g = torch.Generator().manual_seed(1)
    samples = [(torch.randint(0, 151000, (args.prompt,), generator=g),
                torch.randint(0, 151000, (args.answer,), generator=g))
               for _ in range(args.samples)]
    times = []
    for step in range(args.steps + 2):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        rows = [bd3_row(p, a, g) for p, a in samples]
        ids = torch.stack([r[0] for r in rows]).cuda()
        positions = torch.stack([r[1] for r in rows]).cuda()
        mask = torch.stack([mask_of(r[2], r[3]) for r in rows])[:, None].cuda()
        targets = torch.stack([r[4] for r in rows]).cuda()
        weights = torch.stack([r[5] for r in rows]).cuda()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(input_ids=ids, attention_mask=mask, position_ids=positions,
                           use_cache=False).logits
            ce = torch.nn.functional.cross_entropy(
                logits.float().flatten(0, 1), targets.flatten(), reduction="none",
                ignore_index=-100)
            loss = (ce * weights.flatten()).sum() / (args.samples * args.answer)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        if step >= 2:
            times.append(time.perf_counter() - t0)
    median = sorted(times)[len(times) // 2]
    tokens = args.samples * (args.prompt + args.answer)
    peak = torch.cuda.max_memory_allocated() / 2 ** 30
    print(f"PyTorch/transformers SFT step ({args.shape}, {args.samples} x "
          f"{args.prompt}+{args.answer} tokens): {median:.3f} s, {tokens / median:.0f} "
          f"tokens/s, peak {peak:.1f} GiB")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"shape": args.shape, "samples": args.samples, "prompt_tokens": args.prompt,
                       "answer_tokens": args.answer, "step_s": median,
                       "tokens_per_s": tokens / median, "peak_gib": peak}, f, indent=2)


if __name__ == "__main__":
    main()
