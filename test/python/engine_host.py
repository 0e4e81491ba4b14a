"""Runs the engine's emitted CUDA kernels on the host, for tests on a
machine without a GPU: the kernels' source is compiled as C++20, each CUDA
thread a fiber (ucontext) of one OS thread, `__syncthreads` a barrier of the block, a warp
shuffle an exchange through memory between two barriers of the warp, and
blocks one after another, on a grid smaller than the work so that every
grid-stride loop strides. It checks what the kernels compute (offsets,
formulas, rounding, block reductions) against PyTorch; the device, its
memory model and timing are the GPU checks' job (dice corpus engine-check
--build).

Needs g++ and CUDA's half and bfloat16 headers (host-capable), not nvcc.
"""

import ctypes
import re
import subprocess
from pathlib import Path

import torch

from dice.corpus.cuda_common import DTYPES, definition_head, parameters

CUDA_INCLUDE = Path("/usr/local/cuda/include")

PRELUDE = r"""
#include <math.h>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <vector>
#include <ucontext.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#define __global__ static
#define __device__
#define __forceinline__ inline
#define __shared__ static
// A block's CUDA threads are fibers of one OS thread, run in turn until each
// waits at a barrier (__syncthreads, a warp's exchange) or returns; a
// barrier opens when all its threads wait at it. Blocks run one after
// another. No OS scheduling: fast however busy the machine is, and the
// same interleaving on every run. The indices are volatile: a fiber reads
// them again after each switch, when the scheduler has set them for it.
struct HostDim { unsigned x = 0, y = 0, z = 0; };
static volatile HostDim threadIdx, blockIdx;
static HostDim blockDim = {1, 1, 1}, gridDim = {1, 1, 1};
alignas(8) static unsigned char warp_slots[64][32][8];
namespace host {
constexpr int kRunning = 0, kAtBlock = 1;  // or kAtWarp + w: at warp w's barrier
constexpr int kAtWarp = 2;
constexpr size_t kStack = 256 << 10;
struct Fiber { ucontext_t context; int state = kRunning; bool done = false; };
static std::vector<Fiber> fibers;
static std::vector<char *> stacks;  // kept from launch to launch
static ucontext_t scheduler;
static unsigned current;
static void (*body)(void *);
static void *body_arg;
static void fiber_main() { body(body_arg); fibers[current].done = true; }
static void wait_at(int barrier) {
  fibers[current].state = barrier;
  swapcontext(&fibers[current].context, &scheduler);
}
static void enter(unsigned t) {
  current = t;
  threadIdx.x = t % blockDim.x;
  threadIdx.y = t / blockDim.x;
  threadIdx.z = 0;
  swapcontext(&scheduler, &fibers[t].context);
}
// Opens every barrier all of whose threads wait at it; false if none does.
static bool open_barriers(unsigned threads) {
  std::vector<unsigned> waiting(2 + (threads + 31) / 32, 0);
  for (const Fiber &f : fibers)
    if (!f.done && f.state != kRunning) ++waiting[f.state];
  bool opened = false;
  for (unsigned t = 0; t < threads; ++t) {
    Fiber &f = fibers[t];
    if (f.done || f.state == kRunning) continue;
    unsigned size = f.state == kAtBlock ? threads
                    : std::min(32u, threads - unsigned(f.state - kAtWarp) * 32);
    if (waiting[f.state] == size) { f.state = kRunning; opened = true; }
  }
  return opened;
}
}  // namespace host
static inline void __syncthreads() { host::wait_at(host::kAtBlock); }
static inline unsigned host_tid() { return threadIdx.x + blockDim.x * threadIdx.y; }
// A warp's lanes exchange through memory, between two waits on the warp.
template <typename T> T __shfl_down_sync(unsigned, T v, int offset) {
  const unsigned tid = host_tid(), warp = tid / 32, lane = tid % 32;
  const unsigned size = std::min(32u, blockDim.x * blockDim.y - warp * 32);
  std::memcpy(warp_slots[warp][lane], &v, sizeof(T));
  host::wait_at(host::kAtWarp + int(warp));
  T out = v;
  if (lane + offset < size) std::memcpy(&out, warp_slots[warp][lane + offset], sizeof(T));
  host::wait_at(host::kAtWarp + int(warp));
  return out;
}
template <typename T> T __shfl_up_sync(unsigned, T v, int offset) {
  const unsigned tid = host_tid(), warp = tid / 32, lane = tid % 32;
  std::memcpy(warp_slots[warp][lane], &v, sizeof(T));
  host::wait_at(host::kAtWarp + int(warp));
  T out = v;
  if (lane >= unsigned(offset)) std::memcpy(&out, warp_slots[warp][lane - offset], sizeof(T));
  host::wait_at(host::kAtWarp + int(warp));
  return out;
}
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
// Rounded subtractions (never fused into a multiply-add on the device; the
// host does not fuse).
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
// An untyped pointer that becomes whatever pointer a kernel parameter is.
struct AnyPtr {
  void *p;
  template <typename T> operator T *() const { return static_cast<T *>(p); }
};
template <typename F> void host_launch(HostDim grid, HostDim block, F kernel) {
  using namespace host;
  gridDim = grid;
  blockDim = block;
  const unsigned threads = block.x * block.y;
  body = [](void *k) { (*static_cast<F *>(k))(); };
  body_arg = &kernel;
  fibers.assign(threads, Fiber());
  while (stacks.size() < threads) stacks.push_back(static_cast<char *>(std::malloc(kStack)));
  for (unsigned b = 0; b < grid.x * grid.y * grid.z; ++b) {
    blockIdx.x = b % grid.x;
    blockIdx.y = b / grid.x % grid.y;
    blockIdx.z = b / (grid.x * grid.y);
    for (unsigned t = 0; t < threads; ++t) {
      Fiber &f = fibers[t];
      getcontext(&f.context);
      f.context.uc_stack.ss_sp = stacks[t];
      f.context.uc_stack.ss_size = kStack;
      f.context.uc_link = &scheduler;
      makecontext(&f.context, fiber_main, 0);
      f.state = kRunning;
      f.done = false;
    }
    for (;;) {
      for (unsigned t = 0; t < threads; ++t)
        if (!fibers[t].done && fibers[t].state == kRunning) enter(t);
      if (std::all_of(fibers.begin(), fibers.end(), [](const Fiber &f) { return f.done; }))
        break;
      if (!open_barriers(threads)) {
        std::fprintf(stderr, "host_launch: the block's threads wait at barriers that never open\n");
        std::abort();
      }
    }
  }
}
"""

TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16,
                "bfloat16": torch.bfloat16, "int64": torch.int64, "bool": torch.bool}


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

    if STAGED.search(source):  # kernels in turn, buffers between them
        run = staged_run(source, row, launch)
    elif "reduce_kernel" in body:
        run = launch(f"reduce_kernel({a})", grid=(3, 1, 1))
    elif "matmul_kernel" in body:  # the launch dice_forward makes
        (mm,) = [op for op in program["ops"] if op["fn"] == "matmul"]
        *batch, m, n = mm["type"]["shape"]
        run = launch(f"matmul_kernel({a})", block=(16, 16, 1),
                     grid=(-(-n // 16), -(-m // 16), batch[0] if batch else 1))
    elif "scan_kernel" in body:  # a multiple of 32 threads, as dice_forward launches
        run = launch(f"scan_kernel({a})", grid=(3, 1, 1))
    elif "attention_kernel" in body:
        run = launch(f"attention_kernel({a})", grid=(3, 1, 1))
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


# What dice_forward of kernels in turn does: allocate buffers (w0.. of a
# staged reduction, mid0.. of a chain, a chain's stage's own inside its
# block), launch each kernel (a chain's in its stage's namespace).
STAGED = re.compile(r"auto (?:w|mid)\d+ = torch::empty\(")
BUFFER = re.compile(r"auto (\w+) = torch::empty\(\{([\d, ]*)\}, .*\.dtype\((at::k\w+)\)\);")
NAMESPACE = re.compile(r"using namespace (\w+);")
GRID = re.compile(r"const dim3 grid\((.*)\);")
LAUNCH = re.compile(r"(\w+)<<<.*>>>\((.*)\);")
DATA_PTR = re.compile(r"\b(\w+)\.data_ptr")
ELEMENT_SIZE = {"at::kFloat": 4, "at::kHalf": 2, "at::kBFloat16": 2, "at::kDouble": 8,
                "at::kLong": 8, "at::kBool": 1}


def staged_run(source, row, launch):
    """The body of run_<i> for kernels in stages: dice_forward's buffers
    allocated as it allocates them, and its launches in its order, each
    pointer argument (an input, a result, a buffer) mapped to its memory;
    a matmul on the grid dice_forward gives it, of 16 x 16 threads."""
    host = source[source.index(definition_head(row["signature"])):]
    n_in = len(row["program"]["inputs"])
    where = {("", name): f"p[{k}]" for k, name in enumerate(parameters(row["signature"]))}
    where.update({("", f"y{j}"): f"p[{n_in + j}]" for j in range(len(row["program"]["outputs"]))})
    lines, space, grid = [], "", None
    for line in host.splitlines():
        if m := NAMESPACE.search(line):
            space = m.group(1)
        elif m := GRID.search(line):
            # `(N + kTile - 1) / kTile, ...`: integer arithmetic on sizes
            grid = eval(m.group(1).replace("kTile", "16").replace("/", "//"),
                        {"__builtins__": {}})
        elif (m := BUFFER.search(line)) and not re.fullmatch(r"y\d+", m.group(1)):
            name, dims, kind = m.groups()
            numel = 1
            for d in dims.split(","):
                numel *= int(d) if d.strip() else 1
            var = f"{space}_{name}" if space else name
            lines.append(f"std::vector<unsigned char> {var}_bytes({numel * ELEMENT_SIZE[kind]}); "
                         f"void *{var}_p = {var}_bytes.data();")
            where[(space, name)] = f"{var}_p"
        elif m := LAUNCH.search(line):
            kernel, args = m.groups()
            names = [DATA_PTR.search(a).group(1) for a in split_arguments(args)]
            pointers = [f"AnyPtr{{{where.get((space, n)) or where[('', n)]}}}" for n in names]
            call = f"{space + '::' if space else ''}{kernel}({', '.join(pointers)})"
            lines.append(launch(call, grid=grid, block=(16, 16, 1)) if kernel == "matmul_kernel"
                         else launch(call, grid=(3, 1, 1)))
    return " ".join(lines)


def split_arguments(args):
    """A call's arguments, split at the commas outside parentheses and <>."""
    out, depth, start = [], 0, 0
    for i, c in enumerate(args):
        depth += c in "(<"
        depth -= c in ")>"
        if c == "," and depth == 0:
            out.append(args[start:i].strip())
            start = i + 1
    return out + [args[start:].strip()]


def build(rows, workdir):
    """A shared library of every row's kernels (ctypes.CDLL)."""
    workdir = Path(workdir)
    source = workdir / "engine_host.cpp"
    source.write_text(PRELUDE + "\n".join(host_unit(i, r) for i, r in enumerate(rows)))
    library = workdir / "engine_host.so"
    proc = subprocess.run(["g++", "-std=c++20", "-O1", "-shared", "-fPIC",
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
