"""Task packs: RL tasks (KernelBench-format PyTorch programs) turned into
the kernel requests the trainer rolls out and rewards.

Each task is exported with torch-mlir, outlined (at `function` granularity
by default, so one task is one request), scaffolded and planned by the
C++ tools; a pack line holds everything `dice-train` needs on a GPU
machine without LLVM: the reference program, the `dice_forward` signature
the verifier calls, and the scaffold's prefix, suffix and prompts. The
format is documented in docs/corpus.md ("Task packs").
"""

import json
import sys
import tempfile
from pathlib import Path

from dice.errors import DiceError, ProgramError
from dice.jsonl import json_object_line
from dice.pipeline import requests
from dice.programs import load_program, python_identifier
from dice.torch_mlir_import import export_linalg_on_tensors

# The task fields a line must have, and their types.
TASK_FIELDS = {"pytorch_code": str, "level": int}
LEVELS = (1, 2, 3)
PACK_FIELDS = ("id", "level", "pytorch_code", "fingerprint", "signature", "program",
               "reference", "prefix", "suffix", "infill_prompt", "end_to_end_prompt")


class TaskError(DiceError):
    """A task line that cannot become a pack: names the file, line and field."""

    def __init__(self, path, line, field, message):
        self.path, self.line, self.field = path, line, field
        where = f"{path}:{line}" + (f": field '{field}'" if field else "")
        super().__init__(f"{where}: {message}")


def program_requests(pytorch_code, name, granularity="function", config=None):
    """The kernel requests (dice.pipeline.requests dicts) of a KernelBench-
    format program given as source text. Raises DiceError (ProgramError
    for code that does not load, ToolFailed for what the tools reject)."""
    func_name = python_identifier(name)
    with tempfile.TemporaryDirectory(prefix="dice-task-") as tmp:
        source = Path(tmp) / f"{func_name}.py"
        source.write_text(pytorch_code)
        try:
            program = load_program(source)
        except ProgramError as e:
            # The temporary file means nothing to the reader of the task.
            raise ProgramError(str(e).replace(f"{source}: ", "").replace(str(source), "the code")) \
                from e
        try:
            mlir = export_linalg_on_tensors(program.module, program.inputs,
                                            func_name=func_name)
        except Exception as e:  # torch.export and torch-mlir raise many kinds
            first_line = (str(e).strip().splitlines() or [""])[0]
            raise DiceError(f"torch-mlir export failed: {type(e).__name__}: {first_line}") from e
        module_path = Path(tmp) / f"{func_name}.mlir"
        module_path.write_text(mlir)
        found, _ = requests(module_path, granularity, config)
    return found


def parse_task(path, line_no, text):
    """A task line as a dict with pytorch_code, level and id (the line
    number when the task names none)."""
    task = json_object_line(path, line_no, text, TaskError)
    for field, kind in TASK_FIELDS.items():
        if field not in task:
            raise TaskError(path, line_no, field, "missing")
        # bool is an int to Python, never a level.
        if not isinstance(task[field], kind) or isinstance(task[field], bool):
            raise TaskError(path, line_no, field,
                            f"expected {kind.__name__}, got {type(task[field]).__name__}")
    if task["level"] not in LEVELS:
        raise TaskError(path, line_no, "level", f"expected 1, 2 or 3, got {task['level']}")
    task_id = task.get("id", f"line{line_no}")
    if not isinstance(task_id, (str, int)) or isinstance(task_id, bool):
        raise TaskError(path, line_no, "id", f"expected a string, got {type(task_id).__name__}")
    code = task["pytorch_code"]
    for name in ("Model", "get_inputs"):
        if name not in code:
            raise TaskError(path, line_no, "pytorch_code", f"defines no {name}")
    return {"id": str(task_id), "level": task["level"], "pytorch_code": code}


def pack_lines(task, found):
    """One pack object per request of a task; ids get `#k` when several."""
    for k, request in enumerate(found):
        yield {"id": task["id"] + (f"#{k}" if len(found) > 1 else ""),
               "level": task["level"], "pytorch_code": task["pytorch_code"],
               "fingerprint": request["fingerprint"], "signature": request["signature"],
               "program": request["program"], "reference": request["python"],
               **{key: request[key] for key in
                  ("prefix", "suffix", "infill_prompt", "end_to_end_prompt")}}


def task_packs(path, line_no, text, granularity, config=None):
    """The pack objects of one task line; TaskError names what is wrong."""
    task = parse_task(path, line_no, text)
    try:
        found = program_requests(task["pytorch_code"], f"task_{line_no}", granularity,
                                 config)
    except TaskError:
        raise
    except DiceError as e:
        raise TaskError(path, line_no, "pytorch_code", str(e)) from e
    if not found:
        raise TaskError(path, line_no, "pytorch_code", "the program yields no kernel request")
    return task, list(pack_lines(task, found))


def prepare(in_path, out_path, granularity="function", skip_bad=False, log=None,
            config=None):
    """Writes the task packs of every task of `in_path` to `out_path`;
    progress goes to `log` (stderr by default); `config`, a dice.toml, words
    the prompts with its `[prompt]` templates. Returns (tasks packed, pack
    lines written, bad lines skipped)."""
    log = log or sys.stderr
    in_path = Path(in_path)
    try:
        lines = in_path.read_text().splitlines()
    except OSError as e:
        raise DiceError(f"{in_path}: {e.strerror}") from None
    tasks = [(n, text) for n, text in enumerate(lines, 1) if text.strip()]
    packed, written, skipped = 0, 0, 0
    out = []
    for i, (line_no, text) in enumerate(tasks, 1):
        try:
            task, packs = task_packs(in_path, line_no, text, granularity, config)
        except TaskError as e:
            if not skip_bad:
                raise
            skipped += 1
            print(f"[{i}/{len(tasks)}] skipped: {e}", file=log, flush=True)
            continue
        out.extend(json.dumps(p) + "\n" for p in packs)
        packed += 1
        written += len(packs)
        print(f"[{i}/{len(tasks)}] {task['id']}: {len(packs)} request(s) "
              f"({', '.join(p['fingerprint'] for p in packs)})", file=log, flush=True)
    Path(out_path).write_text("".join(out))
    return packed, written, skipped
