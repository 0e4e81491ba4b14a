"""`dice bench tasks DIR`: a folder of KernelBench-format tasks through
torch.compile(backend="dice"), measured with KernelBench's metrics against
eager and against Inductor (docs/pytorch.md, "dice bench tasks").

    tasks.py    finding the tasks of a folder, their inputs per trial
    timing.py   how a forward is timed (CUDA events, or CPU wall clock)
    metrics.py  compiled and correct rates, fast_p, geometric-mean speedup
    run.py      one task at one granularity, and the whole run
    report.py   eval_results.json, summary.json and results.md
    plot.py     speedups.png
"""

from dice.bench.run import BenchOptions, run_bench

__all__ = ["BenchOptions", "run_bench"]
