"""Runs the engine's emitted CUDA kernels on the host, for tests on a
machine without a GPU: the kernels' source is compiled as C++ with one
thread a block and one block a grid, so each grid-stride loop covers every
element in turn (the vector kernel too). The launch configuration and the
real device are the GPU checks' job (dice corpus engine-check --build);
this checks what the kernels compute: offsets, formulas and rounding,
against PyTorch. Block-wide reductions run with one thread, so their warp
shuffles (behind `blockDim.x >= 32`) are the GPU checks' alone.

Needs g++ and CUDA's half and bfloat16 headers (host-capable), not nvcc.
"""

import ctypes
import subprocess
from pathlib import Path

import torch

from dice.corpus.cuda_common import DTYPES, definition_head

CUDA_INCLUDE = Path("/usr/local/cuda/include")

PRELUDE = r"""
#include <math.h>
#include <cmath>
#include <cstdint>
#include <algorithm>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#define __global__ static
#define __device__
#define __forceinline__ inline
#define __shared__ static
struct HostDim { unsigned x; };
static HostDim blockIdx = {0}, threadIdx = {0}, blockDim = {1}, gridDim = {1};
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline void __syncthreads() {}
// Never called: every block-wide step checks blockDim.x >= 32 first.
template <typename T> T __shfl_down_sync(unsigned, T v, int) { return v; }
"""

TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16,
                "bfloat16": torch.bfloat16, "int64": torch.int64}


def available():
    return (CUDA_INCLUDE / "cuda_fp16.h").is_file()


def kernel_source(middle):
    namespace = {}
    exec(middle, namespace)  # the hole is one assignment: source = """..."""
    return namespace["source"]


def host_unit(index, row):
    """Row `index`'s kernels in a namespace, and C entry points that run
    them over all elements: run_<i>(pointers) and, where the kernel has a
    vector path, runvec_<i>(pointers)."""
    source = kernel_source(row["middle"])
    body = source[:source.index(definition_head(row["signature"]))]
    body = "\n".join(line for line in body.splitlines() if not line.startswith("#include"))
    program = row["program"]
    ins = [DTYPES[i["dtype"]].c_type for i in program["inputs"]]
    n_in = len(ins)
    types = program["inputs"] + [op["type"] for op in program["ops"]]
    outs = ["int64_t" if types[o]["dtype"] == "int64" else DTYPES[types[o]["dtype"]].c_type
            for o in program["outputs"]]
    args = [f"(const {t} *)p[{k}]" for k, t in enumerate(ins)] + \
        [f"({t} *)p[{n_in + j}]" for j, t in enumerate(outs)]
    numel = 1
    for size in types[program["outputs"][0]]["shape"]:
        numel *= size
    launch = (f"k{index}::reduce_kernel({', '.join(args)})" if "reduce_kernel" in body
              else f"k{index}::fused_kernel({', '.join(args)}, 0)")
    unit = [f"namespace k{index} {{", "struct float4 { float x, y, z, w; };", body, "}",
            f'extern "C" void run_{index}(void **p) {{ {launch}; }}']
    if "fused_kernel_vec4" in body:
        unit.append(f'extern "C" void runvec_{index}(void **p) {{ '
                    f'k{index}::fused_kernel_vec4({", ".join(args)}); '
                    f'k{index}::fused_kernel({", ".join(args)}, {numel // 4 * 4}); }}')
    return "\n".join(unit)


def build(rows, workdir):
    """A shared library of every row's kernels (ctypes.CDLL)."""
    workdir = Path(workdir)
    source = workdir / "engine_host.cpp"
    source.write_text(PRELUDE + "\n".join(host_unit(i, r) for i, r in enumerate(rows)))
    library = workdir / "engine_host.so"
    proc = subprocess.run(["g++", "-std=c++17", "-O1", "-shared", "-fPIC",
                           f"-I{CUDA_INCLUDE}", str(source), "-o", str(library)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError(f"g++ failed:\n{proc.stderr[-4000:]}")
    return ctypes.CDLL(str(library))


def reference_model(row):
    namespace = {}
    exec(row["reference"], namespace)
    return namespace["Model"](*namespace["get_init_inputs"]())


def run(library, index, row, inputs, vector=False):
    """The kernel's results for `inputs` (CPU tensors of the program's types)."""
    program = row["program"]
    types = program["inputs"] + [op["type"] for op in program["ops"]]
    outputs = [torch.empty(types[o]["shape"], dtype=TORCH_DTYPES[types[o]["dtype"]])
               for o in program["outputs"]]
    tensors = [t.contiguous() for t in inputs] + outputs
    pointers = (ctypes.c_void_p * len(tensors))(*[t.data_ptr() for t in tensors])
    getattr(library, f"{'runvec' if vector else 'run'}_{index}")(pointers)
    return outputs
