"""How a forward is timed: KernelBench's cold-cache method on CUDA (CUDA
events around each run, L2 flushed before it by writing a 256 MB buffer),
wall clock on CPU; warm-up runs first, then the median of the runs."""

import statistics
import time

import torch

WARMUP_RUNS = 3
# Larger than the L2 of any GPU dice targets (H200: 60 MB, B200: 126 MB).
L2_FLUSH_BYTES = 256 * 1024 * 1024


def _cuda_times(fns, inputs, runs, device):
    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device=device)
    times = [[] for _ in fns]
    for _ in range(runs):
        for fn, mine in zip(fns, times):
            flush.fill_(0)
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize(device)
            start.record()
            fn(*inputs)
            end.record()
            torch.cuda.synchronize(device)
            mine.append(start.elapsed_time(end))
    return times


def _cpu_times(fns, inputs, runs):
    times = [[] for _ in fns]
    for _ in range(runs):
        for fn, mine in zip(fns, times):
            start = time.perf_counter()
            fn(*inputs)
            mine.append((time.perf_counter() - start) * 1e3)
    return times


def time_forwards(fns, inputs, runs, device):
    """Milliseconds of each of `runs` calls fn(*inputs) of each of `fns`,
    after their warm-ups: one list per fn. The calls take turns, run by
    run, so that a drift of the machine's speed falls on all of them."""
    device = torch.device(device)
    with torch.no_grad():
        for fn in fns:
            for _ in range(WARMUP_RUNS):
                fn(*inputs)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            return _cuda_times(fns, inputs, runs, device)
        return _cpu_times(fns, inputs, runs)


def time_forward(fn, inputs, runs, device):
    """Milliseconds of each of `runs` calls fn(*inputs), after the warm-up."""
    return time_forwards([fn], inputs, runs, device)[0]


def timing_stats(times, hardware, device):
    """KernelBench's runtime_stats of a list of milliseconds, with the
    median dice's speedups are computed from."""
    return {"mean": statistics.fmean(times), "std": statistics.pstdev(times),
            "min": min(times), "max": max(times), "median": statistics.median(times),
            "num_trials": len(times), "hardware": hardware, "device": str(device)}
