"""A byte-level BPE tokenizer for the project's own model, trained with the
`tokenizers` library on corpus texts and written as a Qwen2 tokenizer
folder (the files of SDAR's, which lib/Model/TokenizerLoad.cpp reads):
vocab.json, merges.txt, tokenizer_config.json (added_tokens_decoder, the
chat template), added_tokens.json, special_tokens_map.json, and
tokenizer.json for the `tokenizers` library.

The pre-tokenizer is Qwen2's regex then byte-level without its own regex;
NFC normalisation as in Qwen2. The added tokens follow the BPE vocabulary
in SDAR's order, so a prompt renders and splits the same way."""

import json
import re
from pathlib import Path

from dice.errors import DiceError
from dice.jsonl import nonempty_lines

QWEN2_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"""
    r""" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

# (content, special): SDAR's end-of-text, chat and mask tokens, and the
# think tags its chat template writes into answers.
ADDED_TOKENS = [("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True),
                ("<think>", False), ("</think>", False), ("<|MASK|>", True)]

# The corpus fields whose texts the tokenizer learns from.
TEXT_FIELDS = ("pytorch_code", "cuda_code", "middle", "reference", "infill_prompt",
               "end_to_end_prompt")

def corpus_texts(paths):
    """Every text field of every JSONL line of `paths`, in file order."""
    texts = []
    for path in paths:
        for n, line in nonempty_lines(path):
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise DiceError(f"{path}:{n}: not JSON: {e.msg}") from None
            if not isinstance(row, dict):
                raise DiceError(f"{path}:{n}: expected a JSON object")
            texts.extend(row[f] for f in TEXT_FIELDS if isinstance(row.get(f), str))
    if not texts:
        raise DiceError("no texts to train on: the corpus files hold none of the fields "
                        + ", ".join(TEXT_FIELDS))
    return texts


def chat_template():
    """The chat template the folder carries: SDAR's (Qwen3's), verbatim, so
    transformers renders prompts as the C++ tokenizer does (it renders this
    template natively)."""
    return Path(__file__).with_name("chat_template.jinja").read_text()


def added_entry(content, special):
    return {"content": content, "lstrip": False, "normalized": False, "rstrip": False,
            "single_word": False, "special": special}


def write_config_files(out_dir, first_added_id):
    ids = {content: first_added_id + i for i, (content, _) in enumerate(ADDED_TOKENS)}
    decoder = {str(ids[c]): added_entry(c, s) for c, s in ADDED_TOKENS}
    specials = [c for c, s in ADDED_TOKENS if s and c != "<|endoftext|>"]
    config = {
        "add_bos_token": False, "add_prefix_space": False,
        "added_tokens_decoder": decoder, "additional_special_tokens": specials,
        "bos_token": None, "chat_template": chat_template(),
        "clean_up_tokenization_spaces": False, "eos_token": "<|endoftext|>",
        "errors": "replace", "model_max_length": 131072, "pad_token": "<|endoftext|>",
        "split_special_tokens": False, "tokenizer_class": "Qwen2Tokenizer",
        "unk_token": None,
    }
    (out_dir / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
    (out_dir / "added_tokens.json").write_text(json.dumps(ids, indent=2) + "\n")
    eos = {k: v for k, v in added_entry("<|endoftext|>", True).items() if k != "special"}
    (out_dir / "special_tokens_map.json").write_text(json.dumps(
        {"additional_special_tokens": specials, "eos_token": eos, "pad_token": eos},
        indent=2) + "\n")


def train_tokenizer(corpus_paths, out_dir, vocab_size):
    """Trains on the corpus texts and writes the folder; returns the number
    of tokens (BPE vocabulary plus the added tokens)."""
    from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers,
                            pre_tokenizers, trainers)

    byte_alphabet = pre_tokenizers.ByteLevel.alphabet()
    bpe_size = vocab_size - len(ADDED_TOKENS)
    if bpe_size < len(byte_alphabet):
        raise DiceError(f"--vocab-size {vocab_size} is too small: the 256 bytes and "
                        f"{len(ADDED_TOKENS)} added tokens need {256 + len(ADDED_TOKENS)}")
    texts = corpus_texts(corpus_paths)
    tokenizer = Tokenizer(models.BPE())
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=bpe_size, initial_alphabet=byte_alphabet,
                                  show_progress=False)
    # The added tokens are cut out before BPE sees a text, so the merges
    # never learn their spelling.
    tokenizer.train_from_iterator(split_added(texts), trainer)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer.model.save(str(out_dir))
    first_added = tokenizer.get_vocab_size()
    for content, special in ADDED_TOKENS:
        token = AddedToken(content, special=special, normalized=False)
        (tokenizer.add_special_tokens if special else tokenizer.add_tokens)([token])
    tokenizer.save(str(out_dir / "tokenizer.json"))
    write_config_files(out_dir, first_added)
    return tokenizer.get_vocab_size()


def split_added(texts):
    """The texts with the added tokens taken out, in pieces."""
    pattern = re.compile("|".join(re.escape(c) for c, _ in ADDED_TOKENS))
    for text in texts:
        yield from (piece for piece in pattern.split(text) if piece)
