"""`DiceLinalgOnTensorsBackend`: dice's pipeline in front of a torch-mlir
style linalg-on-tensors backend.

`compile(module)` runs `dice-opt --dice-pipeline` (outline, scaffold,
infill, verify, resolve, lower): accepted kernels become calls of their
C-interface trampolines `dice_k_<fp>` (docs/runtime.md), everything else
stays linalg, and the inner backend compiles the result. `load(artifact)`
builds the trampolines of the kernels the module calls into one shared
library, linked with libDiceRuntime, and hands it to the inner backend's
`load(..., shared_libs=...)` so that the calls resolve.
"""

import atexit
import hashlib
import os
import re
import shutil
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from dice.errors import DiceError, ToolFailed
from dice.pipeline import compile_pipeline, read_report, report_table, write_config
from dice.tools import SOURCE_ROOT, build_dir, find_tool, run
from dice.torch_mlir.cpu_backend import CpuLinalgBackend
from dice.torch_mlir.errors import KernelLinkError, ModuleError

NO_ENGINE = ("dice.torch_mlir: engine 'none', so no candidate kernels: the pipeline "
             "outlines and scaffolds the kernel requests and every request keeps its "
             "original ops")

# The declarations dice-lower leaves for accepted kernels.
KERNEL_DECLARATION = re.compile(r"func\.func private @dice_k_([0-9a-f]{16})\(")


@dataclass
class DiceArtifact:
    """What `DiceLinalgOnTensorsBackend.compile` gives: the module dice
    lowered (text), the inner backend's compiled form of it, the manifest of
    the kernels it calls (None when it calls none), the report of the
    pipeline and the directory all of it lives in."""
    lowered: str
    compiled: object
    manifest: Path = None
    kernels: tuple = ()
    report: list = field(default_factory=list)
    remarks: list = field(default_factory=list)
    workdir: Path = None

    @staticmethod
    def kernels_called(lowered):
        """The fingerprints of the kernels a lowered module calls."""
        return tuple(dict.fromkeys(KERNEL_DECLARATION.findall(lowered)))


class DiceLinalgOnTensorsBackend:
    """A linalg-on-tensors backend that lets dice replace what it can.

    inner: the backend for what dice did not replace (default
    `CpuLinalgBackend`); its `load` must take `shared_libs`. engine:
    `model` (the default: the config's model or, with none named, the
    shipped model/default), `model:DIR`, `replay:FILE.jsonl`, or `none`,
    which runs outline and scaffold and resolves every request back to its
    ops. config: a
    dice.toml (without one, the run gets a kernel database of its own in
    the work directory). workdir: where the module,
    the artifacts and the trampoline library go (default: a new temporary
    directory per compile, removed when the interpreter exits: the
    trampolines read the manifest there on every call).
    """

    def __init__(self, inner=None, granularity="fusion", engine="model", config=None, jobs=2,
                 workdir=None, extra_options=()):
        self.inner = inner if inner is not None else CpuLinalgBackend()
        self.granularity = granularity
        if not isinstance(engine, str) or not engine:
            raise DiceError(f"engine={engine!r}: name one ('model', 'model:DIR', "
                            "'replay:FILE.jsonl', or 'none' for no candidates)")
        self.engine = engine
        self.config = config
        self.jobs = jobs
        self.workdir = workdir
        self.extra_options = tuple(extra_options)

    def compile(self, module):
        """`module`: a linalg-on-tensors torch_mlir `ir.Module` or its text."""
        text = module if isinstance(module, str) else str(module)
        workdir = self._new_workdir()
        source = workdir / "module.mlir"
        source.write_text(text)
        lowered_path = workdir / "lowered.mlir"
        artifacts = workdir / "artifacts"
        try:
            proc = self._run_pipeline(source, lowered_path, artifacts, workdir)
        except ToolFailed as e:
            raise ModuleError(f"dice-opt cannot compile the module:\n{e.stderr.strip()}") from None
        remarks = read_report(workdir / "report.json")["remarks"]
        return self.compile_lowered(lowered_path.read_text(), artifacts, report_table(proc),
                                    remarks, workdir)

    def compile_lowered(self, lowered, artifacts, report=(), remarks=(), workdir=None):
        """An artifact of a module dice-lower already lowered into
        `artifacts` (for example by `dice-opt --dice-pipeline` on the command
        line): the inner backend compiles it as it is."""
        kernels = DiceArtifact.kernels_called(lowered)
        manifest = Path(artifacts) / "manifest.json" if kernels else None
        return DiceArtifact(lowered, self.inner.compile(lowered), manifest, kernels,
                            list(report), list(remarks),
                            Path(workdir) if workdir else Path(artifacts))

    def load(self, artifact):
        """The inner backend's invoker, the kernels' trampolines linked in."""
        shared_libs = []
        if artifact.kernels:
            # Named by the kernels: a process never loads two libraries
            # under one path (the loader would hand back the first).
            name = hashlib.sha1(",".join(artifact.kernels).encode()).hexdigest()[:12]
            shared_libs.append(link_trampolines(artifact.manifest, artifact.kernels,
                                                artifact.workdir / f"dice_kernels_{name}.so"))
        return self.inner.load(artifact.compiled, shared_libs=shared_libs)

    def _new_workdir(self):
        if self.workdir is not None:
            path = Path(self.workdir)
            path.mkdir(parents=True, exist_ok=True)
            return path
        path = Path(tempfile.mkdtemp(prefix="dice-torch-mlir-"))
        # The trampolines read the manifest at its path on every call, so the
        # directory stays until the interpreter exits.
        _TEMPORARY_DIRS.append(path)
        return path

    def _run_pipeline(self, source, output, artifacts, workdir):
        if self.engine == "none":
            warnings.warn(NO_ENGINE, stacklevel=3)
            return self._run_without_engine(source, output, artifacts, workdir)
        config = self.config
        if config is None:
            config = workdir / "dice.toml"
            write_config(config, workdir / "kernels.db", workdir / "builds")
        return compile_pipeline(source, config, self.engine, artifacts, workdir / "report.json",
                                jobs=self.jobs, granularity=self.granularity, output=output,
                                extra=self.extra_options)

    def _run_without_engine(self, source, output, artifacts, workdir):
        """The passes that need no candidates: requests are outlined and
        scaffolded (so the module is checked as dice sees it), then resolved
        back to their ops."""
        cmd = [find_tool("dice-opt"), source,
               f"--dice-outline=granularity={self.granularity}", "--dice-scaffold",
               "--dice-resolve=report=-", f"--dice-lower=artifacts={artifacts}",
               f"--dice-report-json={workdir / 'report.json'}",
               "-mlir-print-op-on-diagnostic=false", "-o", output]
        if self.config is not None:
            cmd.insert(2, f"--dice-config={self.config}")
        return run(cmd)


_TEMPORARY_DIRS = []


@atexit.register
def _remove_temporary_dirs():
    for path in _TEMPORARY_DIRS:
        shutil.rmtree(path, ignore_errors=True)


def runtime_library():
    """libDiceRuntime.so of the build dice uses."""
    path = build_dir() / "lib" / "Runtime" / "libDiceRuntime.so"
    if not path.is_file():
        raise KernelLinkError(f"no DICE runtime at {path}; build the project "
                              "(scripts/setup.sh) or set DICE_BUILD_DIR")
    return path


def runtime_include_dir():
    """The directory holding dice/Runtime/DiceRuntime.h: this checkout's, or
    that of the source tree the build was configured from."""
    candidates = [SOURCE_ROOT / "include"]
    cache = build_dir() / "CMakeCache.txt"
    if cache.is_file():
        for line in cache.read_text(errors="replace").splitlines():
            if line.startswith("CMAKE_HOME_DIRECTORY:"):
                candidates.append(Path(line.split("=", 1)[1]) / "include")
    for include in candidates:
        if (include / "dice" / "Runtime" / "DiceRuntime.h").is_file():
            return include
    raise KernelLinkError("no dice/Runtime/DiceRuntime.h under "
                          f"{' or '.join(map(str, candidates))}; the trampolines need it")


def link_trampolines(manifest, fingerprints, library):
    """Builds the trampolines `k_<fp>.ciface.c` beside `manifest` for the
    kernels `fingerprints` into the shared library `library`, linked with
    libDiceRuntime; returns its path. The manifest is opened first through
    the runtime, which checks it and loads the kernel libraries, so a bad
    manifest or a library that does not load is an error here and not an
    abort inside a call."""
    from dice.runtime import DiceRuntimeError, Runtime

    manifest = Path(manifest)
    try:
        listed = Runtime(manifest).kernels
    except DiceRuntimeError as e:
        raise KernelLinkError(f"the kernels cannot be loaded: {e}") from None
    sources = []
    for fp in fingerprints:
        source = manifest.parent / f"k_{fp}.ciface.c"
        if fp not in listed:
            raise KernelLinkError(f"the module calls dice_k_{fp}, which {manifest} does not list")
        if not source.is_file():
            raise KernelLinkError(f"no trampoline {source} for kernel {fp}")
        sources.append(source)
    runtime = runtime_library()
    cmd = [os.environ.get("CC", "cc"), "-std=c99", "-shared", "-fPIC", "-O2",
           f"-I{runtime_include_dir()}", "-o", library, *sources, runtime,
           f"-Wl,-rpath,{runtime.parent}"]
    try:
        run(cmd)
    except ToolFailed as e:
        raise KernelLinkError(f"building the kernel trampolines failed:\n{e.stderr.strip()}") \
            from None
    return Path(library)
