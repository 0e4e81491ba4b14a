"""Runs corpus rows on a CUDA GPU the way KernelBench does: each row's
solution, built with torch.utils.cpp_extension, against its `Model` on
fresh inputs (five trials; atol = rtol = 1e-4 for fp32, 1e-2 for fp16 and
bf16), and times both with CUDA events (median of 20 back-to-back calls,
no L2 flush: a rough ratio, not dice-verify's timing). Needs only torch and nvcc, so it
runs on a GPU machine without the rest of the build:

    python python/dice/corpus/gpu_check.py OUT.jsonl CORPUS.jsonl...

The rows' sources are built in a few extensions at once (each solution in
a namespace of its own), since one build costs most of a minute of CPU.
"""

import json
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import torch
from torch.utils.cpp_extension import load_inline

TRIALS = 5
TIMED_RUNS = 20
ROWS_PER_EXTENSION = 16


def cuda_source(row):
    namespace = {}
    exec(row["middle"], namespace)  # the hole is one assignment: source = """..."""
    return namespace["source"]


def namespaced(index, row):
    """(includes, the rest inside `namespace row<index>`)."""
    lines = cuda_source(row).splitlines()
    includes = [line for line in lines if line.startswith("#include")]
    body = [line for line in lines if not line.startswith("#include")]
    return includes, f"namespace row{index} {{\n" + "\n".join(body) + "\n}\n"


def build(chunk_id, chunk, build_root):
    includes, bodies, decls, binds = [], [], [], []
    for index, row in chunk:
        inc, body = namespaced(index, row)
        includes += [i for i in inc if i not in includes]
        bodies.append(body)
        decls.append(f"namespace row{index} {{ {row['signature']} }}")
        binds.append(f'  m.def("row{index}", &row{index}::dice_forward);')
    cpp = "#include <torch/extension.h>\n" + "\n".join(decls) + \
        "\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n" + "\n".join(binds) + "\n}\n"
    return load_inline(name=f"corpus_check_{chunk_id}", cpp_sources=cpp,
                       cuda_sources="\n".join(includes) + "\n" + "\n".join(bodies),
                       extra_cuda_cflags=["-O3"], build_directory=build_root(chunk_id),
                       verbose=False)


def model_of(row):
    namespace = {}
    exec(row["pytorch_code"], namespace)
    return namespace["Model"](*namespace["get_init_inputs"]()).cuda().eval(), \
        namespace["get_inputs"]


def median_ms(fn, inputs):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(TIMED_RUNS):
        start.record()
        fn(*inputs)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def check(row, kernel):
    model, get_inputs = model_of(row)
    worst_abs, worst_rel, correct = 0.0, 0.0, True
    with torch.no_grad():
        for trial in range(TRIALS):
            torch.manual_seed(trial)
            inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in get_inputs()]
            expected = model(*inputs)
            got = kernel(*inputs)
            torch.cuda.synchronize()
            tol = 1e-4 if expected.dtype in (torch.float32, torch.int64) else 1e-2
            if got.shape != expected.shape or got.dtype != expected.dtype:
                return {"status": "incorrect", "reason": f"got {got.dtype}{list(got.shape)}, "
                        f"expected {expected.dtype}{list(expected.shape)}"}
            diff = (got.double() - expected.double()).abs()
            worst_abs = max(worst_abs, diff.max().item())
            # Scale-aware: elementwise relative errors explode near zero.
            scale = expected.double().abs().max().item()
            worst_rel = max(worst_rel, diff.max().item() / scale if scale else 0.0)
            correct &= bool((diff <= tol + tol * expected.double().abs()).all())
        eager = median_ms(model, inputs)
        ours = median_ms(kernel, inputs)
    return {"status": "correct" if correct else "incorrect", "max_abs_err": worst_abs,
            "max_rel_err": worst_rel, "eager_ms": eager, "kernel_ms": ours,
            "speedup": eager / ours if ours else None, "gpu": torch.cuda.get_device_name()}


def rounded(result):
    return {k: round(v, 6) if isinstance(v, float) else v for k, v in result.items()}


def main(argv):
    out_path, corpus = argv[0], argv[1:]
    rows = [json.loads(line) for path in corpus for line in open(path) if line.strip()]
    indexed = list(enumerate(rows))
    chunks = [indexed[i:i + ROWS_PER_EXTENSION]
              for i in range(0, len(indexed), ROWS_PER_EXTENSION)]
    with tempfile.TemporaryDirectory() as tmp:
        def build_root(chunk_id):
            path = os.path.join(tmp, str(chunk_id))
            os.makedirs(path, exist_ok=True)
            return path
        with ThreadPoolExecutor(max_workers=len(chunks)) as pool:
            futures = [pool.submit(build, i, c, build_root) for i, c in enumerate(chunks)]
        results = []
        for (i, chunk), future in zip(enumerate(chunks), futures):
            try:
                module = future.result()
            except Exception as e:  # a build error fails the chunk's rows
                for _, row in chunk:
                    results.append({"id": row["id"], "status": "compile_error",
                                    "reason": str(e)[-2000:]})
                continue
            for index, row in chunk:
                try:
                    verdict = check(row, getattr(module, f"row{index}"))
                except Exception as e:  # the kernel's failure is the row's verdict
                    verdict = {"status": "crashed", "reason": f"{type(e).__name__}: {e}"[:500]}
                results.append({"id": row["id"], "family": row["family"], **verdict})
    with open(out_path, "w") as f:
        f.writelines(json.dumps(rounded(r)) + "\n" for r in results)
    bad = [r for r in results if r["status"] != "correct"]
    for r in bad:
        print(f"{r['id']}: {r['status']}: {r.get('reason', '')} "
              f"abs {r.get('max_abs_err')} rel {r.get('max_rel_err')}")
    print(f"{len(results) - len(bad)}/{len(results)} rows correct")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
