"""Encoding speed of dice-tokenize against transformers, on one file.

    .venv/bin/python tools/dice-tokenize/benchmark.py TOKENIZER_DIR FILE [BUILD_DIR]

Both encode the whole file repeatedly for about a second, in this run, on
this machine; prints tokens/s of each and the ratio. transformers' number
includes its Python call overhead, as a caller of it would pay.
"""

import json
import subprocess
import sys
import time
from pathlib import Path

from transformers import AutoTokenizer


def main():
    folder, path = sys.argv[1], sys.argv[2]
    build = Path(sys.argv[3]) if len(sys.argv) > 3 else Path(__file__).resolve().parents[2] / "build"
    text = Path(path).read_text()
    done = subprocess.run(
        [str(build / "bin" / "dice-tokenize"), "--tokenizer", folder, "--benchmark", path],
        capture_output=True, text=True, check=True)
    dice = json.loads(done.stdout)

    reference = AutoTokenizer.from_pretrained(folder)
    tokens = len(reference.encode(text))
    total, start = 0, time.perf_counter()
    while time.perf_counter() - start < 1.0:
        total += len(reference.encode(text))
    theirs = total / (time.perf_counter() - start)

    print(f"file: {path} ({len(text.encode())} bytes, {tokens} tokens)")
    print(f"dice-tokenize: {dice['tokens_per_second']:,.0f} tokens/s "
          f"(first pass, empty cache: {dice['first_pass_tokens_per_second']:,.0f})")
    print(f"transformers:  {theirs:,.0f} tokens/s")
    print(f"ratio: {dice['tokens_per_second'] / theirs:.1f}x")


if __name__ == "__main__":
    main()
