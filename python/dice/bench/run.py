"""The run: every task of a folder at every granularity through
torch.compile(backend="dice"), checked against eager on fresh inputs and
timed against eager and Inductor on the same device in the same run."""

import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch

from dice.bench import metrics
from dice.bench.correctness import compare
from dice.bench.environment import describe
from dice.bench.tasks import find_tasks, load_task
from dice.bench.timing import time_forwards, timing_stats
from dice.errors import DiceError
from dice.pipeline import first_line


@dataclass
class BenchOptions:
    folder: Path
    out: Path = Path("bench-results")
    granularities: tuple = ("function", "fusion")
    device: str = None           # None: cuda when there is one, else cpu
    engine: str = None           # model, model:DIR, replay:FILE.jsonl, none; None: model
    config: str = None           # a dice.toml
    jobs: int = 2
    export_cache: str = None     # a folder of torch-mlir exports (dice/export_cache.py)
    trials: int = 5
    runs: int = 100
    atol: float = 1e-2
    rtol: float = 1e-2
    limit: int = None
    name_filter: str = None
    progress: bool = True


@dataclass
class TaskResult:
    """One task at one granularity."""
    task: str
    granularity: str
    compiled: bool = False
    correct: bool = False
    error: str = None            # the first line of what went wrong
    trials: int = 0
    trials_passed: int = 0
    max_difference: list = field(default_factory=list)
    avg_difference: list = field(default_factory=list)
    eager_ms: float = None
    inductor_ms: float = None
    dice_ms: float = None
    dice_stats: dict = None
    speedup_vs_eager: float = None
    speedup_vs_inductor: float = None
    noise: float = None          # |Inductor's second median / its first - 1|, same run
    graphs: int = 0              # graphs Dynamo handed the backend
    graphs_dice: int = 0         # of those, the ones dice compiled
    fallback_reasons: list = field(default_factory=list)
    requests_total: int = 0
    requests_accepted: int = 0
    requests_used: int = 0       # accepted and running in the compiled graph
    request_statuses: dict = field(default_factory=dict)   # verdict status -> requests
    compile_s: float = None
    verify_s: float = None
    baseline_errors: dict = field(default_factory=dict)

    @property
    def slower_than_inductor(self):
        """Slower than Inductor beyond the noise measured beside it."""
        if self.dice_ms is None or self.inductor_ms is None:
            return False
        return self.dice_ms > self.inductor_ms * (1 + (self.noise or 0.0))


def error_line(e):
    return f"{type(e).__name__}: {first_line(str(e), 200)}"


def resolve_device(name):
    if name is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise DiceError("--device cuda: torch sees no CUDA device (use --device cpu)")
    if device.type not in ("cuda", "cpu"):
        raise DiceError(f"--device {name}: dice benchmarks on cuda or cpu")
    return device


def dice_compiled(model, granularity, opts):
    """The model under torch.compile(backend="dice"), with a fresh Dynamo
    cache so that no graph of an earlier compile is reused."""
    import dice.backend
    torch._dynamo.reset()
    dice.backend.clear_reports()
    # The backend itself rather than its name: an installation-free checkout
    # (python/ on the path, no entry point) runs the same.
    return torch.compile(model, backend=dice.backend.dice_backend, options={
        "granularity": granularity, "fallback": "inductor", "engine": opts.engine,
        "config": opts.config, "jobs": opts.jobs,
        **({"export_cache": opts.export_cache} if opts.export_cache else {})})


def record_reports(result):
    import dice.backend
    reports = dice.backend.reports()
    result.graphs = len(reports)
    result.graphs_dice = sum(r.used_dice for r in reports)
    result.fallback_reasons = [r.fallback_reason for r in reports if r.fallback_reason]
    requests = [q for r in reports for q in r.requests]
    result.requests_total = len(requests)
    result.requests_accepted = sum(q.status == "accepted" for q in requests)
    result.requests_used = sum(bool(q.used) for q in requests)
    for q in requests:
        result.request_statuses[q.status] = result.request_statuses.get(q.status, 0) + 1
    result.compile_s = sum(r.compile_seconds for r in reports)
    verify = [r.verify_seconds for r in reports if r.verify_seconds is not None]
    result.verify_s = sum(verify) if verify else None


def check_trials(result, compiled, model, inputs, opts):
    """KernelBench's correctness: every trial passes. The first call of the
    compiled model is the compile, so its exception means not compiled."""
    with torch.no_grad():
        for seed in range(opts.trials):
            x = inputs(seed)
            try:
                got = compiled(*x)
            except Exception as e:  # the compile or the compiled code: the task's result
                result.error = error_line(e)
                return
            result.compiled = True
            try:
                expected = model(*x)
            except Exception as e:
                result.error = "eager: " + error_line(e)
                return
            passed, worst, mean, why = compare(got, expected, opts.atol, opts.rtol)
            result.trials += 1
            result.trials_passed += passed
            result.max_difference.append(worst)
            result.avg_difference.append(mean)
            if why and result.error is None:
                result.error = f"trial {seed}: {why}"
    result.correct = result.trials_passed == opts.trials


def bench_granularity(result, model, inputs, timing_inputs, opts, device, hardware):
    compiled = dice_compiled(model, result.granularity, opts)
    try:
        check_trials(result, compiled, model, inputs, opts)
        # KernelBench times correct kernels only.
        if result.correct:
            time_against_baselines(result, model, compiled, timing_inputs, opts, device,
                                   hardware)
    except Exception as e:  # timing a correct kernel can still fail
        result.error = error_line(e)
    finally:
        record_reports(result)


def time_against_baselines(result, model, compiled, timing_inputs, opts, device, hardware):
    """Eager, Inductor and dice timed in turns in one loop, with Inductor
    twice: how far its two medians differ is the noise of this measurement,
    the band inside which dice and Inductor cannot be told apart. Dynamo
    keeps the dice-compiled graphs beside Inductor's (its guards check the
    backend), so both stay compiled while they take turns."""
    fns = {"eager": model}
    try:
        inductor = torch.compile(model)
        with torch.no_grad():
            inductor(*timing_inputs)  # the compile, outside the timing
        fns["inductor"] = inductor
    except Exception as e:
        result.baseline_errors["inductor"] = error_line(e)
    fns["dice"] = compiled
    if "inductor" in fns:
        fns["inductor again"] = fns["inductor"]
    times = dict(zip(fns, time_forwards(list(fns.values()), timing_inputs, opts.runs, device)))
    result.dice_stats = timing_stats(times["dice"], hardware, device)
    result.dice_ms = result.dice_stats["median"]
    result.eager_ms = statistics.median(times["eager"])
    result.speedup_vs_eager = result.eager_ms / result.dice_ms
    if "inductor" in fns:
        result.inductor_ms = statistics.median(times["inductor"])
        again = statistics.median(times["inductor again"])
        result.noise = abs(again / result.inductor_ms - 1)
        result.speedup_vs_inductor = result.inductor_ms / result.dice_ms


def bench_task(task, opts, device, hardware):
    results = [TaskResult(task.name, g) for g in opts.granularities]
    try:
        model, inputs = load_task(task, device)
        timing_inputs = inputs(0)
    except Exception as e:  # a task that does not load does not compile
        for result in results:
            result.error = error_line(e)
        return results
    for result in results:
        bench_granularity(result, model, inputs, timing_inputs, opts, device, hardware)
    torch._dynamo.reset()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return results


@dataclass
class BenchRun:
    environment: dict
    options: BenchOptions
    results: list                # TaskResults, task by task, granularity by granularity
    summary: dict                # granularity -> metrics.summarize(...)
    files: dict = field(default_factory=dict)


def run_bench(opts):
    """Benchmarks every task of opts.folder and writes the reports to
    opts.out; returns the BenchRun."""
    from tqdm import tqdm

    from dice.bench import report
    try:
        import dice.backend  # noqa: F401 (the backend the tasks are compiled with)
    except ImportError as e:
        raise DiceError(f"the torch.compile backend of dice does not load: {e}") from None
    tasks = find_tasks(opts.folder, opts.name_filter, opts.limit)
    device = resolve_device(opts.device)
    environment = describe(device, opts.folder)
    results = []
    bar = tqdm(tasks, file=sys.stderr, disable=not opts.progress, unit="task",
               desc="dice bench", dynamic_ncols=True)
    for task in bar:
        bar.set_postfix_str(task.name)
        results.extend(bench_task(task, opts, device, environment["hardware"]))
    bar.close()
    summary = {g: metrics.summarize([r for r in results if r.granularity == g])
               for g in opts.granularities}
    run = BenchRun(environment, opts, results, summary)
    run.files = report.write_all(run, Path(opts.out))
    return run
