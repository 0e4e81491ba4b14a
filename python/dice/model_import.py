"""`dice model import FILE.gguf DIR`: a GGUF checkpoint (llama.cpp's format,
quantized or not) as a Hugging Face folder the model runtime and `dice-train`
load: config.json, generation_config.json, model.safetensors and the
tokenizer in the Qwen2 file format (vocab.json, merges.txt,
tokenizer_config.json, added_tokens.json, chat_template.jinja).

Weights are dequantized with the `gguf` package (every type it reads) and
stored in bfloat16 (or --dtype). Architectures: qwen2, qwen3 and llama
(llama.cpp stores a llama's q/k rows permuted for its interleaved rotary
form; they are put back in rotate-half order). The tokenizer must be a
byte-level BPE that splits text as Qwen2 does (`tokenizer.ggml.pre` qwen2),
the only pre-tokenizer the runtime implements.

Block diffusion needs a mask token: where the vocabulary has no `<|MASK|>`,
it takes the first unused (padding) id, or a new row appended to the
embedding (and head), initialised to the embedding's mean. config.json names
it (`mask_token_id`), with `block_size`.
"""

import json
import sys
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file

from dice.errors import DiceError

MASK_TOKEN = "<|MASK|>"
# gguf's TokenType values (llama.cpp's llama_token_type).
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
ARCHITECTURES = {"qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM",
                 "llama": "LlamaForCausalLM"}
# llama.cpp's tensor names, per layer ({} is the layer) and global.
LAYER_TENSORS = {
    "attn_norm.weight": "input_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight", "attn_q.bias": "self_attn.q_proj.bias",
    "attn_k.weight": "self_attn.k_proj.weight", "attn_k.bias": "self_attn.k_proj.bias",
    "attn_v.weight": "self_attn.v_proj.weight", "attn_v.bias": "self_attn.v_proj.bias",
    "attn_output.weight": "self_attn.o_proj.weight",
    "attn_output.bias": "self_attn.o_proj.bias",
    "attn_q_norm.weight": "self_attn.q_norm.weight",
    "attn_k_norm.weight": "self_attn.k_norm.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight", "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}
GLOBAL_TENSORS = {"token_embd.weight": "model.embed_tokens.weight",
                  "output_norm.weight": "model.norm.weight", "output.weight": "lm_head.weight"}


class Gguf:
    """A GGUF file's metadata and tensors, with errors that name the file
    and the key."""

    def __init__(self, path):
        import gguf  # only this command needs it
        self.path = Path(path)
        if not self.path.is_file():
            raise DiceError(f"{path}: no such file")
        try:
            self.reader = gguf.GGUFReader(str(self.path))
        except Exception as e:  # a truncated or foreign file
            raise DiceError(f"{path}: not a GGUF file ({e})") from e
        self.gguf = gguf

    def get(self, key, default=None, required=False):
        field = self.reader.fields.get(key)
        if field is None:
            if required:
                raise DiceError(f"{self.path}: metadata key '{key}' is missing")
            return default
        return field.contents()

    def tensors(self):
        """(name, float32 array in PyTorch's [out, in] order) of every tensor."""
        for t in self.reader.tensors:
            try:
                data = self.gguf.quants.dequantize(t.data, t.tensor_type)
            except NotImplementedError as e:
                raise DiceError(f"{self.path}: tensor '{t.name}' has type "
                                f"{t.tensor_type.name}, which gguf cannot dequantize") from e
            yield t.name, np.array(data, dtype=np.float32)  # a copy: the file is mapped read-only


def unpermute_rows(w, heads):
    """llama.cpp's llama q/k permutation undone: its rows pair the halves of
    each head for interleaved rotary; rotate-half wants them split."""
    shape = w.shape
    return w.reshape(heads, shape[0] // heads // 2, 2, *shape[1:]) \
        .swapaxes(1, 2).reshape(shape)


def read_config(g, arch):
    """config.json's hyperparameters from the GGUF metadata."""
    def key(name, **kw):
        return g.get(f"{arch}.{name}", **kw)

    scaling = key("rope.scaling.type")
    if scaling not in (None, "none"):
        raise DiceError(f"{g.path}: '{arch}.rope.scaling.type' is {scaling!r}; rotary "
                        "scaling is not computed")
    hidden = int(key("embedding_length", required=True))
    heads = int(key("attention.head_count", required=True))
    config = {
        "architectures": [ARCHITECTURES[arch]],
        "model_type": arch,
        "hidden_act": "silu",
        "hidden_size": hidden,
        "intermediate_size": int(key("feed_forward_length", required=True)),
        "num_hidden_layers": int(key("block_count", required=True)),
        "num_attention_heads": heads,
        "num_key_value_heads": int(key("attention.head_count_kv", default=heads)),
        "head_dim": int(key("attention.key_length", default=hidden // heads)),
        "rms_norm_eps": float(key("attention.layer_norm_rms_epsilon", required=True)),
        "rope_theta": float(key("rope.freq_base", default=10000.0)),
        "rope_scaling": None,
        "max_position_embeddings": int(key("context_length", default=32768)),
        "use_sliding_window": False,
    }
    if arch != "qwen2":
        config["attention_bias"] = False  # set from the tensors below
    return config


def read_weights(g, config, arch, dtype):
    """The checkpoint's tensors under Hugging Face names, in `dtype`."""
    tensors = {}
    for name, data in g.tensors():
        if name in GLOBAL_TENSORS:
            hf = GLOBAL_TENSORS[name]
        else:
            parts = name.split(".", 2)
            if len(parts) != 3 or parts[0] != "blk" or not parts[1].isdigit() or \
                    parts[2] not in LAYER_TENSORS:
                raise DiceError(f"{g.path}: tensor '{name}' is not one the decoder computes")
            hf = f"model.layers.{parts[1]}.{LAYER_TENSORS[parts[2]]}"
        if arch == "llama" and ".attn_q." in name:
            data = unpermute_rows(data, config["num_attention_heads"])
        elif arch == "llama" and ".attn_k." in name:
            data = unpermute_rows(data, config["num_key_value_heads"])
        tensors[hf] = torch.from_numpy(data).to(dtype)
    if arch != "qwen2":
        config["attention_bias"] = any(k.endswith("o_proj.bias") for k in tensors)
    config["tie_word_embeddings"] = "lm_head.weight" not in tensors
    config["vocab_size"] = tensors["model.embed_tokens.weight"].shape[0]
    return tensors


def read_tokenizer(g):
    """(tokens, types, merges) of a byte-level BPE that splits as Qwen2."""
    model, pre = g.get("tokenizer.ggml.model"), g.get("tokenizer.ggml.pre")
    if model != "gpt2":
        raise DiceError(f"{g.path}: tokenizer.ggml.model is {model!r}; the runtime's "
                        "tokenizer is a byte-level BPE ('gpt2')")
    if pre != "qwen2":
        raise DiceError(f"{g.path}: tokenizer.ggml.pre is {pre!r}; the runtime's "
                        "tokenizer splits text as Qwen2 does ('qwen2')")
    tokens = list(g.get("tokenizer.ggml.tokens", required=True))
    types = list(g.get("tokenizer.ggml.token_type", default=[NORMAL] * len(tokens)))
    merges = list(g.get("tokenizer.ggml.merges", required=True))
    return tokens, types, merges


def place_mask_token(tokens, types, tensors, config):
    """The mask token's id: `<|MASK|>` where the vocabulary has it, else the
    first unused id (renamed), else a new row."""
    if MASK_TOKEN in tokens:
        return tokens.index(MASK_TOKEN)
    vocab = config["vocab_size"]
    unused = [i for i, t in enumerate(types) if t == UNUSED]
    if unused:
        mask = unused[0]
    else:
        mask = max(len(tokens), vocab)
        names = ["model.embed_tokens.weight"] + \
            ([] if config["tie_word_embeddings"] else ["lm_head.weight"])
        for name in names:
            t = tensors[name]
            rows = [t, t.float().mean(0, keepdim=True).to(t.dtype).expand(mask + 1 - len(t), -1)]
            tensors[name] = torch.cat(rows).contiguous()
        config["vocab_size"] = mask + 1
    while len(tokens) <= mask:
        tokens.append(f"[PAD{len(tokens)}]")
        types.append(UNUSED)
    tokens[mask], types[mask] = MASK_TOKEN, CONTROL
    return mask


def write_tokenizer(out, tokens, types, merges, g):
    """The Qwen2 file format: vocab.json holds the BPE's own tokens, the
    control and user-defined ones are added tokens (control ones special)."""
    vocab = {t: i for i, (t, ty) in enumerate(zip(tokens, types)) if ty == NORMAL}
    added = {i: t for i, (t, ty) in enumerate(zip(tokens, types))
             if ty in (CONTROL, USER_DEFINED)}
    (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    (out / "merges.txt").write_text("#version: 0.2\n" + "".join(m + "\n" for m in merges))
    (out / "added_tokens.json").write_text(json.dumps(
        {t: i for i, t in added.items()}, ensure_ascii=False, indent=2))

    def token_of(key):
        i = g.get(key)
        return tokens[int(i)] if i is not None and int(i) < len(tokens) else None

    decoder = {str(i): {"content": t, "lstrip": False, "normalized": False,
                        "rstrip": False, "single_word": False,
                        "special": types[i] == CONTROL} for i, t in added.items()}
    (out / "tokenizer_config.json").write_text(json.dumps({
        "added_tokens_decoder": decoder,
        "bos_token": None if g.get("tokenizer.ggml.add_bos_token") is False
        else token_of("tokenizer.ggml.bos_token_id"),
        "eos_token": token_of("tokenizer.ggml.eos_token_id"),
        "pad_token": token_of("tokenizer.ggml.padding_token_id"),
        "tokenizer_class": "Qwen2Tokenizer", "model_max_length": 32768,
        "clean_up_tokenization_spaces": False, "errors": "replace",
        "split_special_tokens": False}, ensure_ascii=False, indent=2))
    template = g.get("tokenizer.chat_template")
    if template:
        (out / "chat_template.jinja").write_text(template)


def stop_ids(g, tokens):
    """Where generation stops: the file's eos and, where the vocabulary has
    them, the chat end <|im_end|> and <|endoftext|>."""
    ids = []
    eos = g.get("tokenizer.ggml.eos_token_id")
    if eos is not None:
        ids.append(int(eos))
    ids += [tokens.index(t) for t in ("<|im_end|>", "<|endoftext|>") if t in tokens]
    return list(dict.fromkeys(ids))


def import_gguf(path, out_dir, dtype="bfloat16", block_size=4, log=sys.stderr):
    """Converts `path` into the folder `out_dir`; returns config.json's dict."""
    g = Gguf(path)
    arch = g.get("general.architecture", required=True)
    if arch not in ARCHITECTURES:
        raise DiceError(f"{path}: architecture {arch!r} is not a decoder the runtime "
                        f"computes (expected {', '.join(sorted(ARCHITECTURES))})")
    tokens, types, merges = read_tokenizer(g)
    config = read_config(g, arch)
    print(f"dice model import: {path}: {arch}, {config['num_hidden_layers']} layers, "
          f"hidden {config['hidden_size']}; dequantizing", file=log)
    tensors = read_weights(g, config, arch, getattr(torch, dtype))
    mask = place_mask_token(tokens, types, tensors, config)
    stops = stop_ids(g, tokens)
    config.update({"mask_token_id": mask, "block_size": block_size,
                   "eos_token_id": stops[0] if stops else None,
                   "bos_token_id": g.get("tokenizer.ggml.bos_token_id"),
                   "torch_dtype": dtype})
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(out / "model.safetensors"),
              metadata={"format": "pt"})
    (out / "config.json").write_text(json.dumps(config, indent=2))
    (out / "generation_config.json").write_text(json.dumps(
        {"eos_token_id": stops, "do_sample": False}, indent=2))
    write_tokenizer(out, tokens, types, merges, g)
    name = g.get("general.name") or Path(path).name
    print(f"dice model import: {name} -> {out} ({sum(t.numel() for t in tensors.values()):,} "
          f"parameters in {dtype}; mask token id {mask})", file=log)
    return config


def model_import_command(args):
    import_gguf(args.gguf, args.out, dtype=args.dtype, block_size=args.block_size)
    return 0


def add_model_parser(sub):
    model = sub.add_parser("model", help="bring a base model into the runtime's format")
    model_sub = model.add_subparsers(dest="model_command", required=True)
    imp = model_sub.add_parser("import", help="a GGUF file as a Hugging Face folder "
                                              "(dequantized; tokenizer in Qwen2's format)")
    imp.add_argument("gguf", help="FILE.gguf")
    imp.add_argument("out", help="the folder to write")
    imp.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    imp.add_argument("--block-size", type=int, default=4,
                     help="block of the block diffusion (config.json's block_size)")
    imp.set_defaults(run=model_import_command)
    from dice.model_fetch import add_fetch_parser
    add_fetch_parser(model_sub)
