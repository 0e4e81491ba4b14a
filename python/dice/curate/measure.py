"""The speed to beat: each pair's own PyTorch program run eagerly on the
GPU (optionally also compiled by Inductor), timed as the torch.compile
backend times partitions: the summed durations of the GPU kernels of one
call, L2 flushed before each, the median of many calls
(dice.backend.baseline.device_ms). The verifier times the candidate the
same way (`verifier.baseline = "measured_eager"`), so launch latency and
Python overhead count for neither side.
"""

import json
import sys
import tempfile
from pathlib import Path

TIMES_FILE = "times.json"        # the verifier's verifier.baseline_times
FAILURES_FILE = "measure.jsonl"  # programs that could not be timed, and why


def _on(device, value):
    import torch
    return value.to(device) if isinstance(value, torch.Tensor) else value


def program_times(pytorch_code, device, runs, inductor):
    """{"eager_ms"[, "inductor_ms"]} of a KernelBench-format program."""
    import torch
    from dice.backend.baseline import device_ms
    from dice.programs import load_program
    with tempfile.TemporaryDirectory(prefix="dice-curate-") as tmp:
        path = Path(tmp) / "pair.py"
        path.write_text(pytorch_code)
        program = load_program(path)
    module = program.module.to(device)
    inputs = [_on(device, x) for x in program.inputs]
    times = {}
    with torch.no_grad():
        times["eager_ms"] = device_ms(module, inputs, runs, device)
        if inductor:
            times["inductor_ms"] = device_ms(torch.compile(module), inputs, runs, device)
    return times


def measure(lines, work, runs=50, inductor=False, log=None):
    """Writes `work`/times.json (by fingerprint) and `work`/measure.jsonl
    (the programs that failed); returns the number of requests timed."""
    import torch
    log = log or sys.stderr
    work = Path(work)
    times, failures = {}, []
    # One timing per request: pairs of the same program share it.
    to_time = {}
    if torch.cuda.is_available():
        for line in lines:
            if "dropped" not in line:
                to_time.setdefault(line["fingerprint"], line)
    else:
        print("dice-curate: no CUDA device: nothing is timed (and so no pair can be kept)",
              file=log, flush=True)
    for i, (fingerprint, line) in enumerate(to_time.items(), 1):
        try:
            times[fingerprint] = program_times(line["pytorch_code"], "cuda", runs, inductor)
            shown = ", ".join(f"{k} {v:.4f}" for k, v in times[fingerprint].items())
        except Exception as e:  # the pair's code: any failure drops the pair
            failures.append({"fingerprint": fingerprint,
                             "reason": f"{type(e).__name__}: {str(e).strip()}"})
            shown = f"failed: {failures[-1]['reason'].splitlines()[0]}"
        print(f"[timing {i}/{len(to_time)}] {line['id']}: {shown}", file=log, flush=True)
    (work / TIMES_FILE).write_text(json.dumps({"version": 1, "times": times}, indent=1) + "\n")
    (work / FAILURES_FILE).write_text("".join(json.dumps(f) + "\n" for f in failures))
    return len(times)
