"""Drives dice-opt's `--dice-pipeline` from Python: the kernel requests of a
module, replay files of candidate kernels for them, and the run's JSON
report (`--dice-report-json`: each request's candidates and verdicts, and
the passes' remarks).

Used by `dice compile`, the example kernels' generator
(python/dice/example_kernels/make_replay.py) and the end-to-end GPU test
(test/gpu/pipeline_e2e.py).
"""

import json
import os
import tempfile
from collections import namedtuple
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


# A module outlined and scaffolded: its IR, and the remarks of the ops that
# stay outside kernel requests (texts, in order).
Outlined = namedtuple("Outlined", "ir remarks")


def requests(mlir_path, granularity="fusion", config=None):
    """The kernel requests of a module, in order, and the module Outlined.
    Requests are dicts with fingerprint, level, program (the reference
    program), python and signature (the `dice_forward` declaration
    dice-scaffold wrote), and the rest of the scaffold: prefix, suffix,
    infill_prompt and end_to_end_prompt (worded by the `[prompt]` templates
    of `config`, a dice.toml, if given)."""
    with tempfile.TemporaryDirectory(prefix="dice-outline-") as tmp:
        report_path = Path(tmp) / "report.json"
        cmd = [find_tool("dice-opt"), mlir_path,
               f"--dice-outline=granularity={granularity}", "--dice-scaffold",
               f"--dice-report-json={report_path}"]
        if config is not None:
            cmd.insert(2, f"--dice-config={config}")
        outlined = Outlined(run(cmd).stdout, read_report(report_path)["remarks"])
    found = []
    for step in request_steps(outlined.ir):
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


def compile_pipeline(source, config, engine, lowered, report, jobs=2, granularity="fusion",
                     output=None, extra=(), check=True):
    """Runs dice-opt --dice-pipeline: the report's table goes to stdout, its
    JSON (read_report) to the file `report`."""
    options = [f"granularity={granularity}", f"engine={engine}", f"jobs={jobs}",
               f"artifacts={lowered}", *extra]
    cmd = [find_tool("dice-opt"), source, f"--dice-config={config}",
           f"--dice-pipeline={' '.join(options)}", "--dice-report=-",
           f"--dice-report-json={report}",
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


def report_table(proc):
    """The report's table (its lines) of a compile_pipeline run."""
    return [line for line in proc.stdout.splitlines() if line.strip()]


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


def with_float_measurements(verdict):
    """A verdict dict with its measurements as floats (in place)."""
    for key in VERDICT_FLOAT_KEYS:
        if verdict.get(key) is not None:
            verdict[key] = verdict_number(verdict[key])
    return verdict


def read_report(path):
    """dice-opt's JSON report (docs/passes.md, "The JSON report") as a dict:
    `requests` (what dice-resolve decided, each candidate's verdict with its
    measurements as floats, {} for a candidate never verified), `totals`,
    `diagnostics`, `succeeded`, and `remarks`: the remarks' texts, in
    order."""
    report = json.loads(Path(path).read_text())
    for request in report["requests"]:
        for candidate in request["candidates"]:
            candidate["verdict"] = with_float_measurements(candidate["verdict"] or {})
    report["remarks"] = [d["message"] for d in report["diagnostics"]
                         if d["severity"] == "remark"]
    return report


def first_line(text, width=90):
    line = (text or "").strip().split("\n", 1)[0]
    return line if len(line) <= width else line[:width - 3] + "..."
