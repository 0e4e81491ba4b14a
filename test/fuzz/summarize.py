"""Summarises scripts/fuzz.sh's libFuzzer logs into summary.json and a table.

Usage: summarize.py RESULTS_DIR TARGET...
Reads RESULTS_DIR/<target>/fuzz.log (libFuzzer's status lines in -fork
mode) and the finding files libFuzzer left beside it; prints a Markdown table and
writes RESULTS_DIR/summary.json. Exits 1 when any target has a finding.
"""
import json
import pathlib
import re
import sys

FINDING_PREFIXES = ("crash-", "leak-", "timeout-", "oom-", "slow-unit-")


# The fork-mode status line: "#1234: cov: 567 ft: 890 corp: 12 exec/s: 34
# oom/timeout/crash: 0/0/1 time: 600s job: 8 dft_time: 0".
STATUS = re.compile(r"^#(\d+): cov: (\d+) ft: (\d+) corp: (\d+) exec/s:? (\d+) "
                    r"oom/timeout/crash: (\d+)/(\d+)/(\d+) time: (\d+)s", re.M)


def main(results, targets):
    results = pathlib.Path(results)
    rows = []
    for target in targets:
        folder = results / target
        log = (folder / "fuzz.log").read_text(errors="replace")
        last = [int(x) for x in STATUS.findall(log)[-1]] if STATUS.search(log) else [None] * 9
        findings = sorted(p.name for p in folder.iterdir()
                          if p.name.startswith(FINDING_PREFIXES))
        rows.append({
            "target": target,
            "seconds": last[8],
            "executions": last[0],
            "execs_per_second": last[4],
            "coverage": last[1],
            "features": last[2],
            "corpus_inputs": last[3],
            "ooms_timeouts_crashes": last[5:8],
            "findings": findings,
        })
    (results / "summary.json").write_text(json.dumps(rows, indent=2) + "\n")
    print("| target | seconds | executions | execs/s | coverage | corpus | findings |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        print(f"| {r['target']} | {r['seconds']} | {r['executions']} | "
              f"{r['execs_per_second']} | {r['coverage']} | {r['corpus_inputs']} | "
              f"{', '.join(r['findings']) or 'none'} |")
    return 1 if any(r["findings"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
