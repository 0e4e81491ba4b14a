"""KernelBench's metrics (its src/score.py and benchmark_eval_analysis.py):

- compiled rate, correct rate: the share of all tasks, so a task that did
  not compile counts in the denominator;
- correct: every correctness trial passed;
- fast_p: the share of all tasks that are correct and whose speedup over
  the baseline is greater than p (fast_0: correct and any speedup at all);
- geometric-mean speedup over the correct tasks, 0 when none is correct.

A correct task without a speedup (its timing failed) counts as correct and
not fast.
"""

import math

P_VALUES = (0.0, 1.0, 2.0)
BASELINES = ("eager", "inductor")


def rate(flags):
    flags = list(flags)
    return sum(map(bool, flags)) / len(flags) if flags else 0.0


def fast_p(correct, speedups, p):
    correct, speedups = list(correct), list(speedups)
    if len(correct) != len(speedups):
        raise ValueError("one speedup per task")
    fast = sum(1 for c, s in zip(correct, speedups) if c and s is not None and s > p)
    return fast / len(correct) if correct else 0.0


def geomean_speedup(correct, speedups):
    kept = [s for c, s in zip(correct, speedups) if c and s is not None]
    if not kept:
        return 0.0
    return math.exp(sum(math.log(s) for s in kept) / len(kept))


def fast_key(p):
    return f"fast_{p:g}"


def summarize(results):
    """The summary of one granularity's TaskResults."""
    correct = [r.correct for r in results]
    speedups = {b: [getattr(r, f"speedup_vs_{b}") for r in results] for b in BASELINES}
    verify = [r.verify_s for r in results if r.verify_s is not None]
    return {
        "tasks": len(results),
        "compiled": sum(r.compiled for r in results),
        "correct": sum(correct),
        "compiled_rate": rate(r.compiled for r in results),
        "correct_rate": rate(correct),
        "fast_p": {b: {fast_key(p): fast_p(correct, speedups[b], p) for p in P_VALUES}
                   for b in BASELINES},
        "geomean_speedup": {b: geomean_speedup(correct, speedups[b]) for b in BASELINES},
        "requests": {"accepted": sum(r.requests_accepted for r in results),
                     "used": sum(r.requests_used for r in results),
                     "total": sum(r.requests_total for r in results)},
        # The never-slower guarantee: tasks where dice lost to Inductor by
        # more than the noise measured beside it (run.py).
        "slower_than_inductor": [r.task for r in results if r.slower_than_inductor],
        "compile_s": sum(r.compile_s or 0.0 for r in results),
        "verify_s": sum(verify) if verify else None,
    }
