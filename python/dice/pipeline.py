"""Drives dice-opt's `--dice-pipeline` from Python: the kernel requests of a
module, replay files of candidate kernels for them, and what the kernel
database says about each candidate afterwards.

Used by `dice compile`, the example kernels' generator
(python/dice/example_kernels/make_replay.py) and the end-to-end GPU test
(test/gpu/pipeline_e2e.py).
"""

import json
import os
import sqlite3
from pathlib import Path

from dice.reference_program import value_from_json
from dice.tools import SOURCE_ROOT, find_tool, run  # noqa: F401 (re-exported)


def plan_of(mlir_text):
    """dice-plan's JSON plan of a module's (only) function."""
    return json.loads(run([find_tool("dice-plan")], stdin=mlir_text).stdout)


def request_steps(mlir_text):
    """The scaffolded kernel requests of a module's (only) function, as plan
    steps without value numbers (`dice-plan --requests`): had even where the
    function does not plan as a whole."""
    return json.loads(run([find_tool("dice-plan"), "--requests"], stdin=mlir_text).stdout)["steps"]


SCAFFOLD_TEXTS = ("prefix", "suffix", "infill_prompt", "end_to_end_prompt")


def requests(mlir_path, granularity="fusion", config=None):
    """The kernel requests of a module, in order: dicts with fingerprint,
    level, program (the reference program), python and signature (the
    `dice_forward` declaration dice-scaffold wrote), and the rest of the
    scaffold: prefix, suffix, infill_prompt and end_to_end_prompt (worded by
    the `[prompt]` templates of `config`, a dice.toml, if given)."""
    cmd = [find_tool("dice-opt"), mlir_path,
           f"--dice-outline=granularity={granularity}", "--dice-scaffold"]
    if config is not None:
        cmd.insert(2, f"--dice-config={config}")
    outlined = run(cmd)
    found = []
    for step in request_steps(outlined.stdout):
        if "request" in step:
            found.append({"fingerprint": step["request"], "level": step["level"],
                          "program": step["program"], "python": step["python"],
                          "signature": step["signature"],
                          **{key: step[key] for key in SCAFFOLD_TEXTS}})
    return found, outlined


def op_names(program):
    """The program's torch functions, reshapes and constants left out."""
    return [op["fn"] for op in program["ops"]
            if op["fn"] not in ("scalar", "full", "reshape", "expand", "permute")]


def write_replay(path, entries):
    """entries: (fingerprint, cuda source) pairs, in file order."""
    Path(path).write_text("".join(
        json.dumps({"fingerprint": fp, "cuda_source": source}) + "\n"
        for fp, source in entries))


# dice.toml's defaults (Config.h), relative to where dice-opt runs.
DEFAULT_DATABASE = ".dice/kernels.db"
DEFAULT_ARTIFACTS = ".dice/artifacts"


def write_config(path, database, artifacts):
    """A dice.toml naming the kernel database and where builds go."""
    Path(path).write_text(f'[database]\npath = "{database}"\n\n'
                          f'[artifacts]\ndir = "{artifacts}"\n')


def compile_pipeline(source, config, engine, lowered, jobs=2, granularity="fusion",
                     output=None, extra=(), check=True):
    """Runs dice-opt --dice-pipeline; the report goes to stdout."""
    options = [f"granularity={granularity}", f"engine={engine}", f"jobs={jobs}",
               f"artifacts={lowered}", *extra]
    cmd = [find_tool("dice-opt"), source, f"--dice-config={config}",
           f"--dice-pipeline={' '.join(options)}", "--dice-report=-",
           "-mlir-print-op-on-diagnostic=false", "-o", output or os.devnull]
    return run(cmd, check=check)


# The model engine "model" loads when no dice.toml names one: dice-opt looks
# for it beside itself (dice::defaultModelDir), which in a checkout is this
# folder; only its name goes into the kernel database's model id.
DEFAULT_MODEL_DIR = SOURCE_ROOT / "model" / "default"


def model_id(engine, configured=None):
    """The id the kernel database files an engine's candidates under, as
    dice::parseEngineSpec spells it; `configured`: the dice.toml's [model]
    table, if any (`path`, or `base` and `adapter`)."""
    if engine.startswith("replay:"):
        return "replay:" + Path(engine[len("replay:"):]).name
    configured = configured or {}

    def name(path):
        return Path(str(path).rstrip("/")).name
    if engine.startswith("model:"):
        return "dice:" + name(engine[len("model:"):])
    if configured.get("adapter"):
        return f"dice:{name(configured.get('base', ''))}+{name(configured['adapter'])}"
    return "dice:" + name(configured.get("path") or DEFAULT_MODEL_DIR)


def report_and_remarks(proc):
    """(report lines, remark texts) of a compile_pipeline run."""
    report = [line for line in proc.stdout.splitlines() if line.strip()]
    remarks = [line.split("remark: ", 1)[1] for line in proc.stderr.splitlines()
               if "remark: " in line]
    return report, remarks


# The verdict JSON's floating-point keys, and how it spells the doubles JSON
# has no literal for (docs/verifier.md, "Verdict JSON").
VERDICT_FLOAT_KEYS = ("compile_ms", "max_abs_err", "max_rel_err", "kernel_ms",
                      "baseline_ms", "speedup")


def verdict_number(value):
    """A verdict measurement as a float: JSON numbers as they are, and the
    strings of non-finite ones ("inf", "nan", a NaN's bits) as their float."""
    if value is None or not isinstance(value, str):
        return value
    try:
        return value_from_json(value)
    except ValueError:
        raise ValueError(f"not a verdict number: {value!r}") from None


def parse_verdict(text):
    """A verdict JSON object as a dict, its measurements as floats."""
    verdict = json.loads(text)
    for key in VERDICT_FLOAT_KEYS:
        if verdict.get(key) is not None:
            verdict[key] = verdict_number(verdict[key])
    return verdict


def stored_candidates(database):
    """Every candidate in a kernel database, in the order stored: dicts with
    fingerprint, model, gpu_arch, candidate_hash, source, status, verdict
    (parsed) and has_artifact."""
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        rows = db.execute(
            "SELECT fingerprint, model_id, gpu_arch, candidate_hash, source, status, "
            "verdict_json, artifact IS NOT NULL FROM candidates ORDER BY rowid").fetchall()
    return [{"fingerprint": r[0], "model": r[1], "gpu_arch": r[2], "candidate_hash": r[3],
             "source": r[4], "status": r[5], "verdict": parse_verdict(r[6]),
             "has_artifact": bool(r[7])} for r in rows]


def first_line(text, width=90):
    line = (text or "").strip().split("\n", 1)[0]
    return line if len(line) <= width else line[:width - 3] + "..."
