"""dice-tokenize gives the ids, texts and chat prompts that transformers gives.

The reference is `AutoTokenizer.from_pretrained(dir)` for the same tokenizer
folder: the SDAR/DICE one when DICE_SDAR_DIR names it, otherwise a small
Qwen2-style tokenizer that this test trains with the `tokenizers` package, so
the comparison runs either way. Over 10,000 generated strings (code, CUDA,
KernelBench-style programs, many scripts, combining marks, emoji, whitespace,
digits, contractions, special tokens) go through one dice-tokenize process.
"""

import json
import os
import random
import subprocess
import unicodedata
from pathlib import Path

import pytest

from build_tree import BUILD_DIR

DICE_TOKENIZE = BUILD_DIR / "bin" / "dice-tokenize"

QWEN2_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"""
    r""" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
ADDED_TOKENS = ["<think>", "</think>", "<|MASK|>"]

# ---------------------------------------------------------------------------
# The corpus
# ---------------------------------------------------------------------------

CUDA_KERNEL = """#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void fused_gelu_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) {
        float v = x[idx];
        // tanh approximation of GELU
        y[idx] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
    }
}

torch::Tensor fused_gelu_cuda(torch::Tensor x) {
    auto y = torch::empty_like(x);
    const int threads = 256;
    const int blocks = (x.numel() + threads - 1) / threads;
    fused_gelu_kernel<<<blocks, threads>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
    return y;
}
"""

CUDA_REDUCTION = """template <typename T, int BLOCK>
__device__ __forceinline__ T warpReduceSum(T val) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    val += __shfl_down_sync(0xffffffff, val, offset);
  return val;
}

__global__ void rowSoftmax(const half2 *in, half2 *out, int rows, int cols) {
  extern __shared__ float smem[];
  const int row = blockIdx.x;
  float maxVal = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    maxVal = fmaxf(maxVal, __half2float(in[row * cols + c].x));
  smem[threadIdx.x] = maxVal;
  __syncthreads();
  if (threadIdx.x == 0) printf("row %d max=%f\\n", row, smem[0]);
}
"""

KERNELBENCH = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

matmul_source = """
#include <torch/extension.h>
__global__ void matmul_kernel(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; ++k) sum += A[row * K + k] * B[k * N + col];
        C[row * N + col] = sum;
    }
}
"""

matmul = load_inline(name="matmul", cpp_sources="", cuda_sources=matmul_source,
                     functions=["matmul_cuda"], verbose=False)


class ModelNew(nn.Module):
    """Replaces torch.matmul with a custom CUDA kernel."""

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return matmul.matmul_cuda(x, self.weight.t().contiguous())


batch_size = 128
in_features, out_features = 4096, 1024


def get_inputs():
    return [torch.randn(batch_size, in_features).cuda()]


def get_init_inputs():
    return [in_features, out_features]
'''

PYTHON_CODE = """def tokenize(self, text: str) -> list[int]:
    \"\"\"Don't split on 's or 'LL; it's what they'd expect.\"\"\"
    if not text:\r
        return []\r
\tfor i, ch in enumerate(text):
\t\tif ch.isspace() and i % 2 == 0:
\t\t\tyield {"index": i, 'char': ch!r}
    return [x ** 2 for x in range(10_000) if x & 0xFF == 0b1010]  # noqa
"""

CPP_CODE = """namespace dice {
/// Returns the merged ids; std::vector<int32_t> &out is appended to.
template <typename T> static inline auto merge(const T &a, T &&b) -> decltype(a + b) {
  static_assert(sizeof(T) <= 8, "small types only");
  std::unordered_map<std::string, int> m{{"a", 1}, {"b", 2}};
  for (auto &[k, v] : m) std::cout << k << "=" << v << '\\n';
  return a + std::forward<T>(b); // NOLINT
}
} // namespace dice
"""

PROSE = [
    "The quick brown fox jumps over the lazy dog.",
    "I'm sure you've seen it; they'll say we'd known, but he's not.",
    "IT'S DONE. YOU'RE RIGHT. WE'VE WON. I'D SAY SHE'LL COME. DON'T.",
    "It'S a MiXeD cAsE'lL tEsT, isn'T iT? 'tis the 'RE case.",
    "Straße, façade, naïve, coöperate, résumé, Ångström, crème brûlée.",
    "Ελληνικά: Καλημέρα κόσμε! Русский: Съешь же ещё этих мягких булок.",
    "日本語のテキスト、漢字とひらがな。中文：你好，世界！한국어: 안녕하세요 세계",
    "العربية: مرحبا بالعالم. עברית: שלום עולם. हिन्दी: नमस्ते दुनिया। ไทย: สวัสดีชาวโลก",
    "ქართული ენა, Հայերեն լեզու, ᚠᚢᚦᚨᚱᚲ, 𝔘𝔫𝔦𝔠𝔬𝔡𝔢, 𝕄𝕒𝕥𝕙 ∀x∈ℝ: x²≥0 ⇒ √x²=|x|",
    "Emoji: 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇫🇷🇯🇵 ❤️ 🤖🚀✨ 1️⃣ #️⃣",
    "Numbers: 3.14159, 1,000,000, ١٢٣٤٥, １２３, ², ½, Ⅻ, 0x1F600, 1e-9.",
]

SCRIPT_RANGES = [
    (0x0041, 0x007A), (0x00C0, 0x024F), (0x0370, 0x03FF), (0x0400, 0x04FF),
    (0x0530, 0x058F), (0x0590, 0x05FF), (0x0600, 0x06FF), (0x0900, 0x097F),
    (0x0980, 0x09FF), (0x0E00, 0x0E7F), (0x10A0, 0x10FF), (0x1100, 0x11FF),
    (0x1E00, 0x1EFF), (0x2000, 0x206F), (0x2100, 0x214F), (0x2190, 0x22FF),
    (0x3040, 0x30FF), (0x4E00, 0x4FFF), (0xAC00, 0xAD00), (0xF900, 0xFAFF),
    (0xFB00, 0xFB4F), (0xFF00, 0xFFEF), (0x1D400, 0x1D7FF), (0x1F300, 0x1F6FF),
    (0x1F900, 0x1F9FF), (0x20000, 0x200FF),
]
COMBINING = [chr(c) for c in range(0x0300, 0x0370)] + ["\u0653", "\u093c", "\u20dd"]
# NFC changes these: singletons (Ohm, Kelvin, Angstrom, CJK compatibility),
# decomposed accents and Hangul jamo that compose.
NFC_CHANGES = [
    "\u2126", "\u212a", "\u212b", "\uf900", "\uf9ff", "e\u0301", "A\u030a",
    "\u1100\u1161\u11a8", "o\u0308\u0304", "\u0041\u0327\u0301", "\u1e9b\u0323",
]
WHITESPACE = [" ", "  ", "    ", "\t", "\n", "\r\n", "\r", "\n\n\n", " \n ",
              "\u00a0", "\u3000", "\u2028", "\u2029", "\u0085", "\u180e",
              "\u200b", "\x0b", "\x0c", "\u2003", "\u202f", "\u205f", "\x1c"]
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE",
                "'Ve", "'M", "'LL", "'D", "'Ll", "'x", "'", "''", "\u017fs", "'\u017f"]
TOKEN_LIKE = SPECIAL_TOKENS + ADDED_TOKENS + [
    "<MASK>", "<|im_start", "<|im_", "im_end|>", "<|", "|>", "<|endoftext|",
    "<<|im_end|>>", "<|im_start|><|im_end|>", "<think>\n\n</think>\n\n",
]
CODE = [CUDA_KERNEL, CUDA_REDUCTION, KERNELBENCH, PYTHON_CODE, CPP_CODE]


def random_char(rng):
    while True:
        lo, hi = rng.choice(SCRIPT_RANGES)
        ch = chr(rng.randint(lo, hi))
        # Assigned in Python's Unicode tables (the same era as PCRE2's); a
        # code point assigned later may classify differently across libraries.
        if unicodedata.category(ch) not in ("Cn", "Cs", "Co"):
            return ch


def fragment(rng):
    kind = rng.randrange(11)
    if kind == 0:
        code = rng.choice(CODE)
        start = rng.randrange(len(code))
        return code[start:start + rng.randint(1, 400)]
    if kind == 1:
        return rng.choice(PROSE)
    if kind == 2:
        return "".join(random_char(rng) for _ in range(rng.randint(1, 12)))
    if kind == 3:
        base = random_char(rng)
        return base + "".join(rng.choice(COMBINING) for _ in range(rng.randint(1, 4)))
    if kind == 4:
        return rng.choice(NFC_CHANGES)
    if kind == 5:
        return "".join(rng.choice(WHITESPACE) for _ in range(rng.randint(1, 6)))
    if kind == 6:
        word = "".join(rng.choice("aBcDeFghIJklmnoPQrstuvwxYZ") for _ in range(rng.randint(1, 6)))
        return word + rng.choice(CONTRACTIONS)
    if kind == 7:
        return "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 30)))
    if kind == 8:
        return rng.choice(TOKEN_LIKE)
    if kind == 9:
        return rng.choice("!@#$%^&*()_+-=[]{};:'\",.<>/?\\|`~") * rng.randint(1, 8)
    return rng.choice(["x", "(", "a b", " ", "\n", "{", "}", "::", "->", "=="])


def corpus():
    rng = random.Random(20240531)
    texts = ["", " ", "\n", "a", "<|im_end|>", "  \n\t ", "x" * 5000, " " * 3000,
             "=" * 2000, "9" * 500, "\n" * 300 + "a", "é" * 800]
    texts += CODE + PROSE
    # Whole programs, and programs with a special token spliced in.
    for code in CODE:
        for token in TOKEN_LIKE:
            cut = rng.randrange(len(code))
            texts.append(code[:cut] + token + code[cut:])
    while len(texts) < 12000:
        texts.append("".join(fragment(rng) for _ in range(rng.randint(1, 8))))
    return texts


# ---------------------------------------------------------------------------
# The tokenizer folders
# ---------------------------------------------------------------------------


def train_small_tokenizer(directory: Path, texts):
    """A Qwen2-style byte-level BPE trained on `texts`, saved as the files of
    a Hugging Face folder (vocab.json, merges.txt, tokenizer_config.json)."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    trainer = trainers.BpeTrainer(
        vocab_size=3000, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False)
    tokenizer.train_from_iterator(texts, trainer)
    tokenizer.model.save(str(directory))
    size = tokenizer.get_vocab_size()
    added = {}
    for i, token in enumerate(SPECIAL_TOKENS + ADDED_TOKENS):
        added[str(size + i)] = {
            "content": token, "lstrip": False, "normalized": False,
            "rstrip": False, "single_word": False,
            "special": token in SPECIAL_TOKENS or token == "<|MASK|>",
        }
    config = {
        "tokenizer_class": "Qwen2Tokenizer",
        "added_tokens_decoder": added,
        "additional_special_tokens": ["<|im_start|>", "<|im_end|>", "<|MASK|>"],
        "bos_token": None, "eos_token": "<|endoftext|>",
        "pad_token": "<|endoftext|>", "unk_token": None,
        "clean_up_tokenization_spaces": False, "model_max_length": 131072,
    }
    (directory / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    # As in SDAR's folder: added_tokens.json spells the mask token otherwise.
    mask_id = size + len(SPECIAL_TOKENS) + ADDED_TOKENS.index("<|MASK|>")
    (directory / "added_tokens.json").write_text(json.dumps({"<MASK>": mask_id}))


@pytest.fixture(scope="module")
def texts():
    return corpus()


@pytest.fixture(scope="module")
def folder(texts, tmp_path_factory):
    sdar = os.environ.get("DICE_SDAR_DIR")
    if sdar:
        return Path(sdar), True
    directory = tmp_path_factory.mktemp("tokenizer")
    train_small_tokenizer(directory, texts[:4000])
    return directory, False


@pytest.fixture(scope="module")
def reference(folder):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(folder[0]))


def run_dice(folder, lines, *flags):
    assert DICE_TOKENIZE.exists(), f"no dice-tokenize at {DICE_TOKENIZE} (set DICE_BUILD_DIR)"
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    done = subprocess.run(
        [str(DICE_TOKENIZE), "--tokenizer", str(folder[0]), *flags],
        input=stdin, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # Not splitlines(): the JSON may hold U+2028 and other line breaks raw.
    out = [json.loads(line) for line in done.stdout.split("\n")[:-1]]
    assert len(out) == len(lines)
    return out


def report(kind, mismatches, total):
    lines = [f"{len(mismatches)} of {total} {kind} differ; first ones:"]
    for text, ours, theirs in mismatches[:5]:
        lines.append(f"  input {text!r}\n    dice        {ours!r}\n    transformers {theirs!r}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# The tests
# ---------------------------------------------------------------------------


def test_corpus_is_large_and_deterministic(texts):
    assert len(texts) >= 10000
    assert texts == corpus()


def test_encode_parity(folder, reference, texts):
    ours = run_dice(folder, texts)
    theirs = reference(texts)["input_ids"]
    mismatches = [(t, a, b) for t, a, b in zip(texts, ours, theirs) if a != b]
    assert not mismatches, report("encodings", mismatches, len(texts))


def test_decode_parity(folder, reference, texts):
    ids = reference(texts)["input_ids"]
    # Random id sequences too: they cut characters apart, which transformers
    # repairs with U+FFFD.
    rng = random.Random(7)
    size = len(reference)
    ids += [[rng.randrange(size) for _ in range(rng.randint(1, 20))] for _ in range(2000)]
    ours = run_dice(folder, ids, "--decode")
    theirs = reference.batch_decode(ids)
    mismatches = [(i, a, b) for i, a, b in zip(ids, ours, theirs) if a != b]
    assert not mismatches, report("decodings", mismatches, len(ids))
    # Encoding then decoding gives back the NFC text.
    for text, decoded in zip(texts, ours):
        assert decoded == unicodedata.normalize("NFC", text)


def chat_cases(texts):
    users = texts[:300] + ["<tool_response>\nok\n</tool_response>"]
    answers = ["", "yo", "\n\nanswer\n", "<think>\nplan\n</think>\n\ncode",
               "pre<think>a</think>b</think>\nc", "</think>", "x\n</think>"]
    pairs = [[u, answers[i % len(answers)]] for i, u in enumerate(users)]
    pairs.append(["<tool_response>\nok\n</tool_response>", "<think>r</think>done"])
    return users, pairs


def test_chat_template_parity(folder, reference, texts):
    users, pairs = chat_cases(texts)
    ours = run_dice(folder, users + pairs, "--chat")
    if not folder[1]:
        # The trained folder has no chat template of its own: check the
        # renderings the SDAR template gives (the same for every text).
        assert ours[0] == f"<|im_start|>user\n{users[0]}<|im_end|>\n<|im_start|>assistant\n"
        assert ours[len(users) + 1] == (
            f"<|im_start|>user\n{users[1]}<|im_end|>\n<|im_start|>assistant\n"
            "<think>\n\n</think>\n\nyo<|im_end|>\n")
        assert ours[-1] == (
            "<|im_start|>user\n<tool_response>\nok\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\ndone<|im_end|>\n")
        return
    theirs = [reference.apply_chat_template(
        [{"role": "user", "content": u}], tokenize=False, add_generation_prompt=True)
        for u in users]
    theirs += [reference.apply_chat_template(
        [{"role": "user", "content": u}, {"role": "assistant", "content": a}],
        tokenize=False, add_generation_prompt=False) for u, a in pairs]
    cases = users + pairs
    mismatches = [(c, a, b) for c, a, b in zip(cases, ours, theirs) if a != b]
    assert not mismatches, report("chat renderings", mismatches, len(cases))


def test_errors_name_the_file(tmp_path):
    (tmp_path / "vocab.json").write_text('{"a": 0,\n "b": }')
    (tmp_path / "merges.txt").write_text("")
    done = subprocess.run([str(DICE_TOKENIZE), "--tokenizer", str(tmp_path)],
                          input="", capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert f"{tmp_path}/vocab.json:2: error:" in done.stderr
