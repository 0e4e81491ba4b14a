"""`dice train tokenizer`: a byte-level BPE trained on corpus JSONL and
written as a Qwen2 folder. dice-tokenize (the C++ tokenizer the model
runtime uses) must give the ids that the `tokenizers` library and
transformers' AutoTokenizer give for that folder, plain texts and
chat-formatted prompts with the special tokens alike."""

import json
import subprocess

import pytest

from build_tree import BIN, SOURCE_ROOT
from dice.cli import main
from dice.train.bpe import ADDED_TOKENS

DICE_TOKENIZE = BIN / "dice-tokenize"
CORPUS = SOURCE_ROOT / "train" / "data" / "corpus-val.jsonl"
PACKS = SOURCE_ROOT / "train" / "data" / "packs-val.jsonl"
VOCAB_SIZE = 1500

pytestmark = pytest.mark.skipif(not DICE_TOKENIZE.exists(), reason="dice-tokenize is not built")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("bpe")
    assert main(["train", "tokenizer", str(CORPUS), str(PACKS), str(out),
                 "--vocab-size", str(VOCAB_SIZE)]) == 0
    return out


def texts():
    """A few hundred texts: corpus fields, their fragments, and prompts."""
    rows = [json.loads(line) for line in CORPUS.read_text().splitlines()]
    packs = [json.loads(line) for line in PACKS.read_text().splitlines()]
    found = []
    for row in rows:
        found += [row["pytorch_code"], row["middle"]]
        found += row["cuda_code"].splitlines()[:6]
    # A training sample: the prompt, the answer, the end of the turn.
    for pack, row in zip(packs[:10], rows):
        found += [pack["infill_prompt"] + row["middle"] + "<|im_end|>\n",
                  pack["end_to_end_prompt"]]
    found += ["<|MASK|>" * 8 + "tail", "a<|endoftext|>b", "  \n\t x", "é è 中文 🙂",
              "x'll it's", "<think>\n\n</think>\n\ncode<|im_end|>", "<|im_start|><|im_end|>"]
    return found


def dice_tokenize(folder, lines, *flags):
    proc = subprocess.run([str(DICE_TOKENIZE), "--tokenizer", str(folder), *flags],
                          input="".join(json.dumps(x) + "\n" for x in lines),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.split("\n")[:-1]]


def test_the_folder_has_the_qwen2_files(folder):
    for name in ("vocab.json", "merges.txt", "tokenizer_config.json", "added_tokens.json",
                 "special_tokens_map.json", "tokenizer.json"):
        assert (folder / name).is_file(), name
    vocab = json.loads((folder / "vocab.json").read_text())
    added = json.loads((folder / "added_tokens.json").read_text())
    # The added tokens follow the BPE vocabulary, in SDAR's order.
    assert list(added) == [content for content, _ in ADDED_TOKENS]
    assert sorted(added.values()) == list(range(len(vocab), len(vocab) + len(added)))
    assert len(vocab) + len(added) <= VOCAB_SIZE
    config = json.loads((folder / "tokenizer_config.json").read_text())
    decoder = config["added_tokens_decoder"]
    assert {v["content"] for v in decoder.values()} == set(added)
    assert decoder[str(added["<|MASK|>"])]["special"]
    assert config["eos_token"] == "<|endoftext|>"


def test_dice_tokenize_matches_tokenizers_and_transformers(folder):
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    cases = texts()
    assert len(cases) >= 200
    ours = dice_tokenize(folder, cases)
    library = Tokenizer.from_file(str(folder / "tokenizer.json"))
    auto = AutoTokenizer.from_pretrained(str(folder))
    for text, got in zip(cases, ours):
        assert got == library.encode(text, add_special_tokens=False).ids, text[:80]
        assert got == auto.encode(text, add_special_tokens=False), text[:80]
    mask = json.loads((folder / "added_tokens.json").read_text())["<|MASK|>"]
    assert ours[cases.index("<|MASK|>" * 8 + "tail")][:8] == [mask] * 8


def test_chat_prompts_render_and_split_alike(folder):
    from transformers import AutoTokenizer

    auto = AutoTokenizer.from_pretrained(str(folder))
    users = [t for t in texts()[:40]]
    pairs = [[u, "source = '''x'''"] for u in users[:10]]
    rendered = dice_tokenize(folder, users + pairs, "--chat")
    expected = [auto.apply_chat_template([{"role": "user", "content": u}], tokenize=False,
                                         add_generation_prompt=True) for u in users]
    expected += [auto.apply_chat_template([{"role": "user", "content": u},
                                           {"role": "assistant", "content": a}],
                                          tokenize=False) for u, a in pairs]
    assert rendered == expected
    assert dice_tokenize(folder, rendered) == [
        auto.encode(r, add_special_tokens=False) for r in rendered]


def test_bad_corpus_lines_are_errors_with_the_line(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"pytorch_code": "x"}\n{oops\n')
    assert main(["train", "tokenizer", str(bad), str(tmp_path / "out"),
                 "--vocab-size", "400"]) == 1
    assert f"{bad}:2: not JSON" in capsys.readouterr().err
    assert main(["train", "tokenizer", str(CORPUS), str(tmp_path / "out"),
                 "--vocab-size", "100"]) == 1
    assert "too small" in capsys.readouterr().err
