"""The CUDA source for a program whose reductions run over different
shapes or dims, one after another: a loss that reduces each row first
(a cross entropy's log-softmax over the classes, a triplet loss's
distances over the features) and then the rows (the mean over the
batch).

The reductions fall into stages: a stage holds reductions over the same
dims of the same shape, and comes after every stage whose results it
reads. Each stage is one kernel of the reduction emitter
(dice.engine.emit_reduction): one block a kept index. A stage stores the
results that later stages read in buffers of their own shape and dtype
(w0, w1..), allocated in `dice_forward`; the later stage reads them like
inputs, at the coordinates it needs them (a gather reads a log-softmax's
statistics at the row it gathers from). The last stage writes the
program's results.
"""

from dice.corpus.cuda_common import DTYPES, Storage
from dice.corpus.cuda_common import pointer as cuda_pointer
from dice.engine import emit_reduction
from dice.engine.emit_host import (HostFunction, buffer_allocation, kernel_parameters,
                                    source_head, used_parameters)
from dice.engine.emit_reduction import (REDUCING, ReductionEmitter, block_threads, lower_norms,
                                         used_helpers)


def read_through(program, v, stops):
    """The values among `stops` (a stage's reductions, a chain's main ops)
    that value v is computed from directly: the walk back from v stops at
    each one it meets."""
    n_in = len(program["inputs"])
    pending = list(program["ops"][v - n_in]["args"]) if v >= n_in else []
    found, seen = set(), set()
    while pending:
        u = pending.pop()
        if u in seen or u < n_in:
            continue
        seen.add(u)
        if u in stops:
            found.add(u)
            continue
        pending += program["ops"][u - n_in]["args"]
    return found


def _key(program, r):
    """What reductions of one stage share: their operand's shape and dims."""
    n_in = len(program["inputs"])
    types = list(program["inputs"]) + [op["type"] for op in program["ops"]]
    op = program["ops"][r - n_in]
    return tuple(types[op["args"][0]]["shape"]), tuple(ReductionEmitter.dims_of(op))


def reduction_stages(program):
    """The program's reductions in stages (lists of values, in program
    order): each reduction joins the first stage of its key at or after
    the last stage it reads from, where that stage is of its key, and
    after it otherwise; a new stage at the end where none is."""
    n_in = len(program["inputs"])
    reductions = {n_in + i for i, op in enumerate(program["ops"]) if op["fn"] in REDUCING}
    stages, keys, stage_of = [], [], {}
    for r in sorted(reductions):
        key = _key(program, r)
        after = max((stage_of[d] for d in read_through(program, r, reductions)), default=-1)
        first = after if after >= 0 and keys[after] == key else after + 1
        s = next((s for s in range(first, len(stages)) if keys[s] == key), None)
        if s is None:
            stages.append([])
            keys.append(key)
            s = len(stages) - 1
        stages[s].append(r)
        stage_of[r] = s
    return stages


# A buffer holds a reduction's result in its own dtype: those of the
# inputs (bool among them: an any or all) and float64 (a var's sums).
BUFFERS = {**DTYPES, "float64": Storage("torch.float64", "double", "double", "at::kDouble",
                                        "{}", "{}", "")}


def _buffers(program, stages):
    """{reduction: buffer name} for the results of a stage that a later
    stage or a result of the program reads, in program order."""
    stage_of = {r: k for k, stage in enumerate(stages) for r in stage}
    read_later = set()
    for q, k in stage_of.items():
        read_later |= {r for r in read_through(program, q, stage_of) if stage_of[r] < k}
    for o in program["outputs"]:
        read_later |= read_through(program, o, stage_of) | ({o} & set(stage_of))
    last = len(stages) - 1
    stored = sorted(r for r in read_later if stage_of[r] < last)
    return {r: f"w{i}" for i, r in enumerate(stored)}


def emit(program, signature):
    """The CUDA source (kernels and `dice_forward` with exactly
    `signature`) computing `program`, a program of the reduction emitter
    in one kernel or in stages. Raises Unsupported for programs it does
    not take."""
    p = lower_norms(program)
    stages = reduction_stages(p)
    if len(stages) <= 1:
        return emit_reduction.emit(program, signature)
    names, head = source_head(p, signature)
    types = list(p["inputs"]) + [op["type"] for op in p["ops"]]
    in_params, out_params = kernel_parameters(p)
    host = HostFunction(p, signature, names)
    x_pointers = host.pointers[:len(p["inputs"])]
    y_pointers = host.pointers[len(p["inputs"]):]
    buffers = _buffers(p, stages)

    def storage(r):
        return BUFFERS[types[r]["dtype"]]

    kernels, launches = [], []
    for r, w in buffers.items():
        launches.append(buffer_allocation(w, types[r]["shape"], storage(r).kind, names[0]))
    done = set()
    for k, stage in enumerate(stages):
        read = {r: w for r, w in buffers.items() if r in done}
        e = ReductionEmitter(p, reductions=stage, loaded=read)
        params = in_params + [f"const {storage(r).c_type} *__restrict__ {w}"
                              for r, w in read.items()]
        pointers = x_pointers + [pointer(w, types[r]["dtype"], storage(r)) for r, w in read.items()]
        kernel_name = f"reduce_stage{k}"
        if k < len(stages) - 1:
            stored = [r for r in stage if r in buffers]
            outs = [f"{storage(r).c_type} *__restrict__ {buffers[r]}" for r in stored]
            out_pointers = [pointer(buffers[r], types[r]["dtype"], storage(r), const=False)
                            for r in stored]
            write = dict(outputs=stored, out_names=[buffers[r] for r in stored])
        else:
            outs, out_pointers, write = out_params, y_pointers, {}
        kernel, pointers = used_parameters(
            e.kernel(params, outs, kernel_name=kernel_name, **write), kernel_name, params,
            outs, pointers)
        kernels.append(kernel)
        pointers += out_pointers
        done |= set(stage)
        launches += [
            f"  // stage {k}: over dims {e.dims} of {list(e.full)}, a block a kept index",
            f"  {kernel_name}<<<(int)std::min<int64_t>({e.kept_c}, 65535), "
            f"{block_threads(e.extent)}, 0, c10::cuda::getCurrentCUDAStream()>>>("
            f"{', '.join(pointers)});"]
    text = "\n".join(kernels)
    helpers = [h.strip("\n") + "\n" for h in used_helpers(text)]
    return "\n".join([head, *helpers, text, host.text(launches)]) + "\n"


def pointer(name, dtype, storage, const=True):
    """Buffer `name` as a kernel argument."""
    if dtype in DTYPES:
        return cuda_pointer(name, dtype, const=const)
    return f"{name}.data_ptr<{storage.at_type}>()"
