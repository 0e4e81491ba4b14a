"""The build halves hold by path: no library or tool of lib/, dialects/,
passes/ or tools/ includes, through any header of the project, what its half
may not (docs/architecture.md, "Two halves and a shared middle"): code
built with neither LLVM nor LibTorch includes neither, LLVM-built code no
LibTorch, LibTorch-built code no LLVM, MLIR or Clang.

A target's half follows from what CMake links it with (build's
dice-targets.json, written at configure time): LLVM, MLIR or libclang-cpp
make it LLVM-built, LibTorch LibTorch-built, and a target that links a
project library of a half is in that half too.
"""

import json
import re
from pathlib import Path

import pytest

from build_tree import BUILD_DIR, SOURCE_ROOT

TARGETS = BUILD_DIR / "dice-targets.json"
FORBIDDEN = {
    "neither": ("mlir/", "llvm/", "llvm-c/", "clang/", "torch/", "ATen/", "c10/"),
    "llvm": ("torch/", "ATen/", "c10/"),
    "torch": ("mlir/", "llvm/", "llvm-c/", "clang/"),
}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)

pytestmark = pytest.mark.skipif(not TARGETS.exists(), reason="no configured build tree")


def own_half(links):
    """The half a target's own links name, or None."""
    names = set(links)
    if names & {"LLVM", "MLIR", "clang-cpp"} or any(n.startswith("MLIR") for n in names):
        return "llvm"
    if "torch" in names or any(re.search(r"/libtorch[^/]*\.so$|/libc10\.so$", n) for n in names):
        return "torch"
    return None


def halves():
    """{target: (half, [source paths])}, MLIR's object libraries folded in."""
    entries = json.loads(TARGETS.read_text())
    targets = {}
    for e in entries:
        name = e["name"].removeprefix("obj.")
        folder = SOURCE_ROOT / e["dir"]
        sources = [Path(s) if Path(s).is_absolute() else folder / s for s in e["sources"]]
        t = targets.setdefault(name, {"links": [], "sources": []})
        t["links"] += e["links"]
        t["sources"] += [s for s in sources if s.suffix in (".cpp", ".c", ".h")]
    half = {name: own_half(t["links"]) for name, t in targets.items()}
    # A project library's half is every target's that links it.
    changed = True
    while changed:
        changed = False
        for name, t in targets.items():
            if half[name]:
                continue
            for link in t["links"]:
                if half.get(link):
                    half[name] = half[link]
                    changed = True
                    break
    return {name: (half[name] or "neither", t["sources"]) for name, t in targets.items()}


def resolve(spelled, including):
    """The project file a quoted include names, or None (a system header)."""
    for base in (including.parent, SOURCE_ROOT / "include", BUILD_DIR / "include"):
        path = (base / spelled).resolve()
        if path.is_file():
            return path
    return None


def violations(source, forbidden, seen):
    """(chain, include) pairs: a forbidden include reached from `source`."""
    found = []
    stack = [(source, (source,))]
    while stack:
        path, chain = stack.pop()
        if path in seen:
            continue
        seen.add(path)
        for kind, spelled in INCLUDE.findall(path.read_text(errors="replace")):
            if spelled.startswith(forbidden):
                found.append((chain, spelled))
                continue
            if kind == '"':
                target = resolve(spelled, path)
                if target is not None:
                    stack.append((target, chain + (target,)))
    return found


def test_every_target_has_a_half_and_sources():
    targets = halves()
    # The libraries the architecture names in each half are found as such.
    assert targets["DicePasses"][0] == "llvm"
    assert targets["DiceTrain"][0] == "torch"
    assert targets["DiceSupport"][0] == "neither"
    assert targets["DiceVerifierCore"][0] == "neither"
    assert all(sources for _, sources in targets.values())


@pytest.mark.parametrize("name", sorted(halves()) if TARGETS.exists() else [])
def test_a_target_includes_only_what_its_half_may(name):
    half, sources = halves()[name]
    seen, found = set(), []
    for source in sources:
        found += violations(source, FORBIDDEN[half], seen)
    assert not found, f"{name} ({half}): " + "; ".join(
        " -> ".join(str(p.relative_to(SOURCE_ROOT)) if SOURCE_ROOT in p.parents else str(p)
                    for p in chain) + f" includes <{spelled}>"
        for chain, spelled in found)


def test_the_check_finds_a_forbidden_include(tmp_path):
    """The scan follows project headers: an include two headers away counts."""
    (tmp_path / "a.h").write_text('#include "b.h"\n')
    (tmp_path / "b.h").write_text("#include <mlir/IR/Operation.h>\n")
    (tmp_path / "x.cpp").write_text('#include "a.h"\nint main() {}\n')
    found = violations(tmp_path / "x.cpp", FORBIDDEN["neither"], set())
    assert [spelled for _, spelled in found] == ["mlir/IR/Operation.h"]
    assert [p.name for p in found[0][0]] == ["x.cpp", "a.h", "b.h"]
    assert violations(tmp_path / "x.cpp", FORBIDDEN["llvm"], set()) == []
