"""Counts what each test suite ran, from the JUnit XML files it wrote.

Usage: test-summary.py RESULTS_DIR SUITE... (the ctest test names).
Prints one line per suite and a last line `N passed, N failed` (with
`, N skipped` when any were). Exits non-zero when a suite wrote no results or
any test failed, so a suite that silently ran nothing cannot pass.
"""
import pathlib
import sys
import xml.etree.ElementTree as ET


def count(path):
    passed = failed = skipped = 0
    for case in ET.parse(path).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def main(results_dir, suites):
    results = pathlib.Path(results_dir)
    totals = [0, 0, 0]
    ok = True
    for suite in suites:
        path = results / f"{suite}.xml"
        if not path.exists():
            print(f"{suite:>14}: no results (the suite did not run)")
            ok = False
            continue
        p, f, s = count(path)
        print(f"{suite:>14}: {p} passed, {f} failed, {s} skipped")
        if p == 0:
            ok = False
        totals = [totals[0] + p, totals[1] + f, totals[2] + s]
    line = f"{totals[0]} passed, {totals[1]} failed"
    if totals[2]:
        line += f", {totals[2]} skipped"
    print(line)
    return 0 if ok and totals[1] == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
