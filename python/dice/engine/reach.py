"""How much of a set of PyTorch programs the engine's emitters write.

Each program's kernel requests are the compiler's (function granularity,
through the export path, as `dice-train`'s task packs make them); for each
request, the first family whose emitter writes its kernel, or, where none
does, what each emitter said. A model trained on the engine's corpus learns
what the emitters write, so a request no emitter writes is one the corpus
does not teach: the report groups those by the ops that are not
elementwise (two matmuls, a convolution and a group norm), the kinds the
grammar lacks.
"""

import json
import sys
from collections import Counter
from pathlib import Path

from dice.engine.emit_elementwise import ELEMENTWISE
from dice.engine.emit_host import Unsupported
from dice.engine.generate import FAMILIES


def emitter_for(program, signature):
    """(the family whose emitter writes `program`'s kernel or None,
    {family: why not} for those tried before it or all of them)."""
    why = {}
    for family, (_, emit, _) in FAMILIES.items():
        try:
            emit(program, signature)
            return family, why
        except Unsupported as e:
            why[family] = str(e)
        except (ValueError, IndexError, KeyError) as e:  # a form the emitter never met
            why[family] = f"{type(e).__name__}: {e}"
    return None, why


def kind_of(program):
    """The ops of `program` that are not elementwise, counted ("conv,
    group_norm" or "matmul x2"); "elementwise" where there are none."""
    count = Counter(op["fn"] for op in program["ops"] if op["fn"] not in ELEMENTWISE)
    dtypes = {t["dtype"] for t in program["inputs"]} - {"float32", "float16", "bfloat16"}
    kind = ", ".join(f"{fn} x{n}" if n > 1 else fn for fn, n in sorted(count.items()))
    return (kind or "elementwise") + "".join(f" ({d} input)" for d in sorted(dtypes))


def program_files(paths):
    """The programs among `paths` and in the folders among them, sorted:
    a file named is taken as it is; in a folder, the .py files that define
    `get_inputs` (a folder's helpers are left out)."""
    files = []
    for path in map(Path, paths):
        if path.is_dir():
            files += [f for f in sorted(path.rglob("*.py"))
                      if "def get_inputs" in f.read_text(errors="replace")]
        else:
            files.append(path)
    return files


def reach(paths, log=sys.stderr):
    """The report over every program file of `paths`: one entry a file
    (its requests, each with its family or its reasons) and counts by
    folder."""
    from dice.train.prepare import program_requests
    files = program_files(paths)
    entries = []
    for n, path in enumerate(files, 1):
        entry = {"file": str(path), "folder": str(path.parent)}
        try:
            requests = program_requests(path.read_text(), path.stem)
        except Exception as e:  # noqa: BLE001 - a program that does not export is counted
            entry["error"] = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
            requests = []
        entry["requests"] = []
        for request in requests:
            family, why = emitter_for(request["program"], request["signature"])
            entry["requests"].append({"fingerprint": request["fingerprint"],
                                      "kind": kind_of(request["program"]),
                                      "family": family, **({} if family else {"why": why})})
        entries.append(entry)
        written = sum(r["family"] is not None for r in entry["requests"])
        print(f"[{n}/{len(files)}] {path}: {written} of {len(entry['requests'])} requests"
              + (f" (export failed: {entry['error']})" if "error" in entry else ""), file=log)
    return {"programs": entries, "folders": _by_folder(entries)}


def _by_folder(entries):
    folders = {}
    for entry in entries:
        f = folders.setdefault(entry["folder"], {"programs": 0, "export_failed": 0,
                                                 "requests": 0, "written": 0, "unwritten": {}})
        f["programs"] += 1
        f["export_failed"] += "error" in entry
        for r in entry["requests"]:
            f["requests"] += 1
            if r["family"]:
                f["written"] += 1
            else:
                f["unwritten"][r["kind"]] = f["unwritten"].get(r["kind"], 0) + 1
    return folders


def summary_text(report):
    """A screen of text: per folder, the requests the emitters write, and
    the kinds of those they do not."""
    lines = []
    for folder, f in sorted(report["folders"].items()):
        share = f"{100 * f['written'] / f['requests']:.0f}%" if f["requests"] else "-"
        lines.append(f"{folder}: {f['written']} of {f['requests']} requests ({share}) "
                     f"written by an emitter; {f['programs']} programs"
                     + (f", {f['export_failed']} did not export" if f["export_failed"] else ""))
        for kind, n in sorted(f["unwritten"].items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"  {n:4d}  {kind}")
    return "\n".join(lines)


def reach_command(args):
    report = reach(args.paths)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print(summary_text(report))
    return 0
