"""Runs the engine's emitted CUDA kernels on the host, for tests on a
machine without a GPU: the kernels' source is compiled as C++20, each CUDA
thread an OS thread, `__syncthreads` a barrier of the block, a warp
shuffle an exchange through memory between two barriers of the warp, and
blocks one after another, on a grid smaller than the work so that every
grid-stride loop strides. It checks what the kernels compute (offsets,
formulas, rounding, block reductions) against PyTorch; the device, its
memory model and timing are the GPU checks' job (dice corpus engine-check
--build).

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
#include <cstring>
#include <algorithm>
#include <barrier>
#include <memory>
#include <thread>
#include <vector>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#define __global__ static
#define __device__
#define __forceinline__ inline
#define __shared__ static
// One OS thread a CUDA thread; blocks one after another.
struct HostDim { unsigned x = 0, y = 0, z = 0; };
static thread_local HostDim threadIdx, blockIdx;
static HostDim blockDim = {1, 1, 1}, gridDim = {1, 1, 1};
static std::unique_ptr<std::barrier<>> block_barrier;
static std::vector<std::unique_ptr<std::barrier<>>> warp_barriers;
alignas(8) static unsigned char warp_slots[64][32][8];
static inline void __syncthreads() { block_barrier->arrive_and_wait(); }
static inline unsigned host_tid() { return threadIdx.x + blockDim.x * threadIdx.y; }
// A warp's lanes exchange through memory, between two waits on the warp.
template <typename T> T __shfl_down_sync(unsigned, T v, int offset) {
  const unsigned tid = host_tid(), warp = tid / 32, lane = tid % 32;
  const unsigned size = std::min(32u, blockDim.x * blockDim.y - warp * 32);
  std::memcpy(warp_slots[warp][lane], &v, sizeof(T));
  warp_barriers[warp]->arrive_and_wait();
  T out = v;
  if (lane + offset < size) std::memcpy(&out, warp_slots[warp][lane + offset], sizeof(T));
  warp_barriers[warp]->arrive_and_wait();
  return out;
}
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
template <typename F> void host_launch(HostDim grid, HostDim block, F kernel) {
  gridDim = grid;
  blockDim = block;
  const unsigned threads = block.x * block.y;
  for (unsigned b = 0; b < grid.x * grid.y * grid.z; ++b) {
    block_barrier = std::make_unique<std::barrier<>>(threads);
    warp_barriers.clear();
    for (unsigned w = 0; w * 32 < threads; ++w)
      warp_barriers.push_back(std::make_unique<std::barrier<>>(std::min(32u, threads - w * 32)));
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, b, t] {
        blockIdx = {b % grid.x, b / grid.x % grid.y, b / (grid.x * grid.y)};
        threadIdx = {t % block.x, t / block.x, 0};
        kernel();
      });
    for (auto &thread : pool) thread.join();
  }
}
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
    a = ", ".join(args)

    def launch(call, grid=(2, 1, 1), block=(64, 1, 1)):
        return (f"host_launch({{{', '.join(map(str, grid))}}}, "
                f"{{{', '.join(map(str, block))}}}, [&] {{ k{index}::{call}; }});")

    if "reduce_kernel" in body:
        run = launch(f"reduce_kernel({a})", grid=(3, 1, 1))
    elif "matmul_kernel" in body:  # the launch dice_forward makes
        (mm,) = [op for op in program["ops"] if op["fn"] == "matmul"]
        *batch, m, n = mm["type"]["shape"]
        run = launch(f"matmul_kernel({a})", block=(16, 16, 1),
                     grid=(-(-n // 16), -(-m // 16), batch[0] if batch else 1))
    elif "pool_kernel" in body:
        run = launch(f"pool_kernel({a})")
    elif "layout_kernel" in body:
        run = launch(f"layout_kernel({a})")
    elif "conv_kernel" in body:
        run = launch(f"conv_kernel({a})")
    else:
        run = launch(f"fused_kernel({a}, 0)")
    unit = [f"namespace k{index} {{", "struct float4 { float x, y, z, w; };", body, "}",
            f'extern "C" void run_{index}(void **p) {{ {run} }}']
    if "fused_kernel_vec4" in body:
        unit.append(f'extern "C" void runvec_{index}(void **p) {{ '
                    f'{launch(f"fused_kernel_vec4({a})")} '
                    f'{launch(f"fused_kernel({a}, {numel // 4 * 4})")} }}')
    return "\n".join(unit)


def build(rows, workdir):
    """A shared library of every row's kernels (ctypes.CDLL)."""
    workdir = Path(workdir)
    source = workdir / "engine_host.cpp"
    source.write_text(PRELUDE + "\n".join(host_unit(i, r) for i, r in enumerate(rows)))
    library = workdir / "engine_host.so"
    proc = subprocess.run(["g++", "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread",
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
