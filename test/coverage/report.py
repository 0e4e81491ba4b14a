"""The coverage records summarised per family, and docs/coverage.md."""

import re
from collections import Counter, defaultdict

from measure import GRANULARITIES, MAX_RELATIVE_ERROR

MODES = ("static", "dynamic")


def compiled(record, g):
    result = record["granularities"].get(g, {})
    return "export_error" not in record and result.get("compiled", False)


def all_inside(record, g="fusion"):
    """Every compute op of the function is inside a kernel request."""
    return compiled(record, g) and record["granularities"][g].get("compute_outside", 1) == 0


def faithful(record):
    """Planned and within tolerance through both backends at every granularity measured."""
    gs = record["granularities"]
    return bool(gs) and "export_error" not in record and all(
        gs[g].get("faithful", False) for g in gs)


def worst_error(record):
    errors = [b["max_rel_err"] for g in record["granularities"].values()
              for b in g.get("backends", {}).values() if b.get("max_rel_err") is not None]
    return max(errors) if errors else None


def reason(remark):
    """A remark without the shapes that make every instance differ."""
    remark = re.sub(r" \((tensor|memref|vector)<[^)]*\)", "", remark)
    return re.sub(r"(tensor|memref|vector)<[^>]*>", r"\1<...>", remark)


def failures(record):
    """(stage, granularities, message) of everything that went wrong, merged over granularities."""
    if "export_error" in record:
        return [("export", "", record["export_error"])]
    found = defaultdict(list)
    for g, r in record["granularities"].items():
        if not r["compiled"]:
            found[("crash" if r["crashed"] else "compile", r.get("error", ""))].append(g)
            continue
        if "plan_error" in r:
            stage = "plan crash" if r.get("plan_crashed") else "plan"
            found[(stage, r["plan_error"])].append(g)
            continue
        for backend, b in r.get("backends", {}).items():
            if b.get("error"):
                found[(f"run ({backend})", b["error"])].append(g)
            elif b["max_rel_err"] > MAX_RELATIVE_ERROR:
                found[(f"unfaithful ({backend})",
                       f"max relative error {b['max_rel_err']:.3g}")].append(g)
    return [(stage, ", ".join(gs), message) for (stage, message), gs in found.items()]


def summarise(records, families):
    """Per mode and family: counts and shares; remark reasons; failure kinds."""
    summary = {"families": {}, "totals": {}, "remarks": {}, "failure_kinds": {},
               "outside_ops": {}}
    for mode in MODES:
        rows = {}
        for family in list(families) + ["all"]:
            rs = [r for r in records if r["mode"] == mode and family in ("all", r["family"])]
            if not rs and family != "all":
                continue
            errors = [e for e in map(worst_error, rs) if e is not None]
            rows[family] = {
                "programs": len(rs),
                "exported": sum("export_error" not in r for r in rs),
                "compiled": {g: sum(compiled(r, g) for r in rs) for g in GRANULARITIES},
                "all_inside_fusion": sum(all_inside(r) for r in rs),
                "faithful": sum(faithful(r) for r in rs),
                "worst_error": max(errors) if errors else None,
            }
        summary["families"][mode] = {k: v for k, v in rows.items() if k != "all"}
        summary["totals"][mode] = rows["all"]
        remarks, programs_with = Counter(), defaultdict(set)
        ops = Counter()
        for r in records:
            if r["mode"] != mode or not compiled(r, "fusion"):
                continue
            fusion = r["granularities"]["fusion"]
            for text in fusion["remarks"]:
                remarks[reason(text)] += 1
                programs_with[reason(text)].add(r["name"])
            ops.update(fusion.get("outside_ops", {}))
        summary["remarks"][mode] = [
            {"reason": k, "remarks": n, "programs": len(programs_with[k])}
            for k, n in remarks.most_common()]
        summary["outside_ops"][mode] = dict(ops.most_common())
        kinds = Counter()
        for r in records:
            if r["mode"] == mode:
                for stage, _, message in failures(r):
                    kinds[(stage, reason(message))] += 1
        summary["failure_kinds"][mode] = [
            {"stage": s, "message": m, "programs": n} for (s, m), n in kinds.most_common()]
    return summary


def _share(n, total):
    return f"{n}/{total} ({100 * n / total:.0f}%)" if total else "-"


def _family_table(rows, totals):
    out = ["| family | programs | exported | compiles: op | fusion | function "
           "| all compute inside (fusion) | faithful | worst rel. error |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for family, row in [*rows.items(), ("**all**", totals)]:
        n = row["programs"]
        err = "-" if row["worst_error"] is None else f"{row['worst_error']:.2g}"
        out.append(" | ".join([
            f"| {family}", str(n), _share(row["exported"], n),
            *(_share(row["compiled"][g], n) for g in GRANULARITIES),
            _share(row["all_inside_fusion"], n), _share(row["faithful"], n), err]) + " |")
    return out


def _cell(text):
    return text.replace("|", "\\|")


def markdown(summary, records, meta):
    static, dynamic = summary["totals"]["static"], summary["totals"]["dynamic"]
    every = sum(all(compiled(r, g) for g in GRANULARITIES) for r in records)
    lines = [
        "# Front-end coverage",
        "",
        "Written by `scripts/coverage.py`; regenerate with one command (about "
        f"{meta['minutes']:.0f} minutes with 2 processes):",
        "",
        "```sh",
        ".venv/bin/python scripts/coverage.py   # tools of $DICE_BUILD_DIR, default build/",
        "```",
        "",
        f"{static['programs']} programs of {len(summary['families']['static'])} op families "
        "(`test/coverage/programs/`, written for this suite), each exported with static shapes "
        f"and, for {dynamic['programs']} of them, once more with a dynamic batch (a "
        "`torch.export.Dim` on dim 0; a Python int argument, as a dynamic int). Each export "
        "is outlined and scaffolded at granularity "
        "op, fusion and function (`dice-opt --dice-outline=granularity=G --dice-scaffold`), "
        "planned (`dice-plan`), and the plan run on fresh inputs by the printed Python "
        "programs (`dice.plan.run_plan`) and by the ATen executor (`dice-reference-run --plan`), "
        "both compared with eager PyTorch. A dynamic-batch export runs at a batch 3 larger "
        "than it was exported with, and with its int arguments 2 larger, so its sizes and "
        "numbers must come from its inputs.",
        "",
        f"Measured: programs at commit `{meta['commit']}`, tools of `{meta['build']}` "
        f"(dice-opt built {meta['built']} from `{meta['build_source']}`, whose HEAD was "
        f"`{meta['build_commit']}` when measured), "
        f"{meta['date']}, {meta['seconds']:.0f} s with {meta['jobs']} processes "
        f"({meta['worker_seconds']:.0f} s of the processes' time, summed over the exports; "
        "the wall time depends on what else the machine runs).",
        "",
        "Columns: *compiles*: dice-opt exits 0 at that granularity (an export failure counts "
        "as not compiled); *all compute inside*: at fusion granularity no linalg, arith or "
        "math op that computes on the inputs is left outside a `dice.kernel_request` "
        "(constants, `tensor.empty`, reshapes, slices, pads, concatenation, fills, index "
        "arithmetic of dynamic shapes and ops reading only weights do not count); "
        f"*faithful*: at all three granularities the plan runs through both backends within "
        f"{MAX_RELATIVE_ERROR:g} max relative error of eager (error / max |eager|); "
        "*worst rel. error*: over every plan that ran.",
        "",
        "## Against the acceptance criteria",
        "",
        f"- compiles at every granularity: {_share(every, len(records))} of all exports "
        "(target: all)",
        f"- every compute op inside a request at fusion granularity: "
        f"{_share(static['all_inside_fusion'], static['programs'])} static, "
        f"{_share(dynamic['all_inside_fusion'], dynamic['programs'])} dynamic batch "
        "(target: at least 90%)",
        f"- faithful (within {MAX_RELATIVE_ERROR:g} at every granularity, both backends): "
        f"{_share(static['faithful'], static['programs'])} static, "
        f"{_share(dynamic['faithful'], dynamic['programs'])} dynamic batch (target: all)",
        "",
        "## Static shapes",
        "",
        *_family_table(summary["families"]["static"], static),
        "",
        "## Dynamic batch",
        "",
        *_family_table(summary["families"]["dynamic"], dynamic),
    ]
    for mode in ("static", "dynamic"):
        lines += ["", f"## Why ops stay outside requests ({mode}, fusion granularity)", "",
                  "dice-opt's remarks, shapes elided, counted over the programs that compiled.",
                  "", "| reason | remarks | programs |", "| --- | ---: | ---: |"]
        lines += [f"| {_cell(x['reason'])} | {x['remarks']} | {x['programs']} |"
                  for x in summary["remarks"][mode]] or ["| (none) | 0 | 0 |"]
        ops = summary["outside_ops"][mode]
        if ops:
            lines += ["", "Compute ops left outside, by name: " + ", ".join(
                f"`{k}` {v}" for k, v in ops.items()) + "."]
    for mode in ("static", "dynamic"):
        lines += ["", f"## Failure kinds ({mode})", "",
                  "Each program counted once per kind (stage and first error line).", "",
                  "| stage | first error line | programs |", "| --- | --- | ---: |"]
        lines += [f"| {x['stage']} | {_cell(x['message'])} | {x['programs']} |"
                  for x in summary["failure_kinds"][mode]] or ["| (none) | | 0 |"]
    lines += ["", "## Failures", "",
              "| program | family | mode | stage | granularities | first error line |",
              "| --- | --- | --- | --- | --- | --- |"]
    for r in records:
        for stage, gs, message in failures(r):
            lines.append(f"| {r['name']} | {r['family']} | {r['mode']} | {stage} | {gs} "
                         f"| {_cell(message)} |")
    return "\n".join(lines) + "\n"
