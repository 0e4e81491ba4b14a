"""The speed to beat: each kernel request's partition timed as Inductor
compiles it, and eagerly, on the GPU that will run it.

What counts is the partition's device work, as it runs inside a compiled
graph: a standalone call of an Inductor-compiled function spends most of a
small op's time in its Python wrapper (a `tanh` over 4M floats: 54 us a
call against 12 us of kernel), which a kernel inside the graph never pays.
So the time of one run is the sum of the GPU kernels it launched, read from
the CUDA profiler, with the L2 cache flushed before each run; the median of
many runs is reported. The verifier gets the Inductor time per fingerprint
through `verifier.baseline_times` (docs/verifier.md).
"""

import json
import statistics

import torch

from dice.backend.isolation import outside_dynamo
from dice.plan import DTYPES, python_model

FLUSH_BYTES = 256 << 20  # more than the H200's 60 MB L2


def random_inputs(program, device, generator):
    """Inputs of a reference program's signature, as the verifier draws them:
    normal floats, small integers, random booleans."""
    made = []
    for t in program["inputs"]:
        dtype = DTYPES[t["dtype"]]
        shape = t["shape"]
        if dtype.is_floating_point:
            made.append(torch.randn(shape, generator=generator).to(device, dtype))
        elif dtype == torch.bool:
            made.append(torch.randint(0, 2, shape, generator=generator).to(device, dtype))
        else:
            made.append(torch.randint(0, 8, shape, generator=generator).to(device, dtype))
    return made


def device_ms(fn, inputs, runs, device):
    """Median over `runs` of the GPU kernel time one call of `fn` launches on
    `device`. Named, not read off the inputs: a program may take only Python
    numbers, or nothing (a mask or position table built from constants)."""
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device=device)
    for _ in range(3):
        fn(*inputs)
    torch.cuda.synchronize()
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as profile:
        for i in range(runs):
            flush.zero_()
            with torch.profiler.record_function(f"dice_run_{i}"):
                fn(*inputs)
        torch.cuda.synchronize()
    # The CPU-side range of each run: its device time is that of the kernels
    # launched inside it (the GPU-side copy of the range is left out).
    times = [event.device_time_total / 1000.0 for event in profile.events()
             if event.name.startswith("dice_run_")
             and event.device_type == torch.autograd.DeviceType.CPU]
    if len(times) != runs:
        raise RuntimeError(f"the profiler saw {len(times)} of {runs} timed runs")
    return statistics.median(times)


def inductor_compiled(model, inputs, device):
    """`model` (a reference program's Model) as Inductor compiles it for
    `inputs` on `device`, outside any Dynamo compile in progress
    (isolation.py)."""
    from torch._inductor.compile_fx import compile_fx
    from torch.fx.experimental.proxy_tensor import make_fx

    with outside_dynamo(), torch.no_grad():
        with torch.device(device):
            graph = make_fx(model, tracing_mode="fake")(*inputs)
        return compile_fx(graph, inputs)


def partition_times(requests, device, runs=50):
    """{fingerprint: {"eager_ms", "inductor_ms"}} of each request's reference
    program on `device` (a CUDA device)."""
    generator = torch.Generator().manual_seed(0)
    times = {}
    for request in requests:
        model = python_model(request["python"])
        inputs = random_inputs(request["program"], device, generator)
        inductor = inductor_compiled(model, inputs, device)
        with torch.no_grad():
            times[request["fingerprint"]] = {
                "eager_ms": device_ms(model, inputs, runs, device),
                "inductor_ms": device_ms(inductor, inputs, runs, device),
            }
    return times


def write_times(path, times):
    path.write_text(json.dumps({"version": 1, "times": times}, indent=1) + "\n")
