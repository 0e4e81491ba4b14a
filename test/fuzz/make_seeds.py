"""Writes the seed inputs of the fuzz targets into test/fuzz/corpus/<target>/.

Seeds are real inputs of each reader, taken from the project's own files
(configs, checkpoints' config.json, manifests, task packs, verifier corpus
kernels, exported MLIR) or written here the way the tools write them
(safetensors files, kernel databases through `dice-db import`). Findings
that the fuzzer saves later sit beside them under their own names.

Usage: python test/fuzz/make_seeds.py BUILD_DIR
"""
import json
import pathlib
import struct
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "test" / "fuzz" / "corpus"


def put(target, name, data):
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    (folder / f"seed-{name}").write_bytes(data)


def jsonl(path, limit):
    with open(path) as f:
        return [json.loads(line) for line, _ in zip(f, range(limit))]


def safetensors(tensors, metadata=None):
    """The safetensors layout: u64 header length, JSON header, data."""
    header, data = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def main(build):
    packs = jsonl(ROOT / "train" / "data" / "packs-train.jsonl", 400)[::40]
    rows = jsonl(ROOT / "train" / "data" / "corpus-train.jsonl", 400)[::40]

    put("config", "full", (ROOT / "test" / "unit" / "Inputs" / "full.toml").read_text())
    put("config", "small", "[sampling]\ntemperature = 0.7\ntop_k = 20\n"
        "[verifier]\natol = 1e-5\nbaseline = \"inductor\"\ntimeout_s = 30\n")

    for path in sorted((ROOT.parent / "shared" / "sdar").glob("*config*.json")) + \
            sorted((ROOT / "model" / "default").glob("*config.json")):
        put("model-config", path.parent.name + "-" + path.stem, path.read_bytes())

    put("safetensors", "two", safetensors({
        "a": ("F32", [2, 2], struct.pack("<4f", 1, 2, 3, 4)),
        "b": ("BF16", [3], b"\x80\x3f" * 3)}, {"format": "pt"}))
    put("safetensors", "empty-tensor", safetensors({"e": ("F16", [0, 4], b"")}))
    put("safetensors", "scalar", safetensors({"s": ("I64", [], struct.pack("<q", 7))}))

    put("tokenizer", "python", rows[0]["pytorch_code"])
    put("tokenizer", "cuda", rows[1]["cuda_code"][:3000])
    put("tokenizer", "chat", packs[0]["infill_prompt"][:2000])
    put("tokenizer", "unicode", "naïve café — 数据 ½ 😀 \u0301e\n\t  x")

    for i, pack in enumerate(packs[:4]):
        put("extraction", f"infill-answer-{i}",
            'source = """\n' + rows[i]["cuda_code"] + '\n"""\n')
        put("extraction", f"whole-program-{i}",
            pack["prefix"] + 'source = """\n' + rows[i]["cuda_code"] + '\n"""\n' +
            pack["suffix"])
        put("extraction", f"signature-{i}", pack["signature"])
    put("extraction", "fenced", "Here it is:\n```python\nsource = r'''\n__global__ void k() {}\n'''\n```\n")

    for i, pack in enumerate(packs[:6]):
        put("formats", f"program-{i}", b"\x01" + json.dumps(pack["program"]).encode())
    verdicts = (ROOT / "test" / "gpu" / "results" /
                "torch-compile-h200-verdicts-inductor.jsonl").read_text().splitlines()
    for i, line in enumerate(verdicts[:4]):
        put("formats", f"verdict-{i}", b"\x00" + line.encode())
    put("formats", "baseline-times", b"\x02" + json.dumps({
        "3f9a0c1d2e4b5a69": {"inductor_ms": 0.012, "eager_ms": 0.02},
        "00aa11bb22cc33dd": {"eager_ms": 1.5}}).encode())

    kernel = {"library": "k_3f9a0c1d2e4b5a69.so", "operator": "dice::k_3f9a0c1d2e4b5a69",
              "inputs": [{"shape": [128, 512], "dtype": "f32"}],
              "results": [{"shape": [128, 256], "dtype": "f32"}],
              "verdict": json.loads(verdicts[0])}
    put("manifest", "one", json.dumps({"version": 1, "kernels": {"3f9a0c1d2e4b5a69": kernel}}, indent=2))
    put("manifest", "empty", '{"version": 1, "kernels": {}}\n')

    for path in sorted((ROOT / "test" / "Inputs" / "torch-mlir").glob("*.mlir")):
        if path.stat().st_size <= 10000:
            put("dice-opt", path.stem, path.read_bytes())
    put("dice-opt", "tiny", "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = arith.addf %a, %a : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n")

    for name in ("honest_add", "honest_softmax", "honest_matmul_tiled",
                 "hack_static_cache", "hack_system_access", "fault_oob_write"):
        put("deception", name, (ROOT / "test" / "verifier" / "corpus" / f"{name}.cu").read_bytes())

    dice_db = pathlib.Path(build) / "bin" / "dice-db"
    with tempfile.TemporaryDirectory() as tmp:
        records = pathlib.Path(tmp) / "records.jsonl"
        lib = pathlib.Path(tmp) / "k.so"
        lib.write_bytes(b"\x7fELF fake library bytes")
        lines = []
        for i, status in enumerate(("accepted", "incorrect", "slow")):
            verdict = {"status": status}
            if status != "accepted":
                verdict["reason"] = "seed"
            if status in ("accepted", "slow"):
                verdict.update({"kernel_ms": 0.1 * (i + 1), "baseline_ms": 0.2})
            lines.append(json.dumps({
                "fingerprint": "f00df00df00df00d", "model": "fuzz", "gpu_arch": "sm_90",
                "source": f"__global__ void k{i}() {{}}\n", "verdict": verdict,
                "chosen": status == "accepted", **({"artifact": "k.so"} if i == 0 else {})}))
        records.write_text("\n".join(lines) + "\n")
        db = pathlib.Path(tmp) / "kernels.db"
        subprocess.run([str(dice_db), "import", str(db), str(records)], check=True)
        # One file, no WAL beside it: what a copied database looks like.
        subprocess.run([sys.executable, "-c",
                        "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]);"
                        "c.execute('PRAGMA wal_checkpoint(TRUNCATE)');"
                        "c.execute('PRAGMA journal_mode=DELETE'); c.close()", str(db)],
                       check=True)
        put("kernel-db", "three-candidates", db.read_bytes())


if __name__ == "__main__":
    main(sys.argv[1])
