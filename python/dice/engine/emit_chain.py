"""The CUDA source for a program of several main ops in sequence: a linear,
an activation and another linear; a convolution, a norm and a pool; a
convolution, the mean over its spatial dims and a linear.

Each main op is a stage, written by its own family's emitter as the
kernels of a sub-program: the main op, the elementwise ops, views and
constants it is computed from back to the program's inputs or an earlier
stage's main op (its prologue), and for the last stage everything after
it up to the program's results (the epilogue). A main op that a later
stage reads is stored, as its own result, in a buffer (mid0, mid1..)
allocated in `dice_forward`; the later stage reads it like an input, and
computes the elementwise ops between the two on the fly as it loads it.
A matmul, a softmax and a matmul that read one another (attention) are one
stage of the attention emitter, where it takes them. Reductions and norms
that follow one another with no other main op between are one stage: the reduction emitter already runs them in stages
of its own (dice.engine.emit_stages). Where the results are not of the
last main op's elements (its product with an earlier layer's value, a cat
of several layers), that main op is stored too, and one more stage
computes the results from the buffers, an element a thread.

A stage's kernels live in a namespace of their own (stage0, stage1..), so
two stages of one family define the same names, and `dice_forward`
launches each stage in a block that uses its namespace.
"""

import math
import re

from dice.corpus.cuda_common import definition_head
from dice.engine import (emit_attention, emit_conv, emit_matmul, emit_pool, emit_scan,
                         emit_stages)
from dice.engine.emit_host import (HostFunction, Unsupported, buffer_allocation, declaration,
                                   kernel_parameters, size_expression, source_head,
                                   used_parameters)
from dice.engine.emit_pool import POOLS
from dice.engine.emit_reduction import REDUCING, ValueEmitter
from dice.engine.emit_stages import BUFFERS, read_through
from dice.engine.scan import KINDS as SCANS

NORM_FNS = ("softmax", "log_softmax", "layer_norm", "rms_norm", "group_norm")


def family_of(fn):
    """The stage family of op `fn`, None for an op every stage computes
    where it reads it (elementwise ops, views, constants)."""
    if fn in ("matmul", "conv"):
        return fn
    if fn in POOLS:
        return "pool"
    if fn in SCANS:
        return "scan"
    if fn in REDUCING or fn in NORM_FNS:
        return "reduction"
    return None


def stages_of(program):
    """[(family, [main op values])] in program order: a new stage for each
    main op, except that a reduction or norm joins a stage of reductions
    just before it."""
    n_in = len(program["inputs"])
    stages = []
    for i, op in enumerate(program["ops"]):
        family = family_of(op["fn"])
        if family is None:
            continue
        if family == "reduction" and stages and stages[-1][0] == "reduction":
            stages[-1][1].append(n_in + i)
        else:
            stages.append((family, [n_in + i]))
    return stages


def fuse_attention(program, stages):
    """`stages` with each matmul, softmax (alone in its stage, along the
    last dim) and matmul in a row that reads the one before it (through
    elementwise ops: a scale, masks) made one stage of the attention
    emitter, whose block keeps a row of scores: they never leave it."""
    n_in = len(program["inputs"])
    fused, k = [], 0
    while k < len(stages):
        window = stages[k:k + 3]
        if [f for f, _ in window] == ["matmul", "reduction", "matmul"] and \
                len(window[1][1]) == 1:
            (scores,), (softmax,), (values,) = (v for _, v in window)
            op = program["ops"][softmax - n_in]
            anchors = {scores, softmax, values}
            if op["fn"] == "softmax" and op["ints"]["dim"] == [len(op["type"]["shape"]) - 1] \
                    and read_through(program, softmax, anchors) == {scores} \
                    and read_through(program, values, anchors) == {softmax}:
                fused.append(("attention", [scores, softmax, values]))
                k += 3
                continue
        fused.append(stages[k])
        k += 1
    return fused


def sub_program(program, targets, leaves):
    """(the program computing values `targets` from the program's inputs
    and the values of `leaves` (in that order, as its inputs), the values
    its inputs stand for). What it computes is copied from `program`, in
    program order, each op named as `program` names it."""
    n_in = len(program["inputs"])
    needed, pending = set(), list(targets)
    while pending:
        v = pending.pop()
        if v in needed:
            continue
        needed.add(v)
        if v >= n_in and v not in leaves:
            pending += program["ops"][v - n_in]["args"]
    sources = [v for v in range(n_in) if v in needed] + [v for v in leaves if v in needed]
    number = {v: k for k, v in enumerate(sources)}
    types = list(program["inputs"]) + [op["type"] for op in program["ops"]]
    ops = []
    for v in sorted(needed - set(sources)):
        op = program["ops"][v - n_in]
        number[v] = len(sources) + len(ops)
        # The kernel's variables keep the whole program's names (t7 for its
        # value 7), the names the prompt shows.
        ops.append({**op, "args": [number[a] for a in op["args"]],
                    "name": op.get("name", f"t{v}")})
    inputs = [{"shape": list(types[v]["shape"]), "dtype": types[v]["dtype"]} for v in sources]
    return {"inputs": inputs, "ops": ops, "outputs": [number[t] for t in targets]}, sources


def _host_body(source, signature):
    """The lines of `dice_forward` in `source` that launch its kernels
    (and allocate the buffers they share): what lies between the outputs'
    allocation and the launch check, input checks left out."""
    head = definition_head(signature) + " {"
    lines = source[source.index(head) + len(head):].split("\n")
    end = lines.index("  C10_CUDA_KERNEL_LAUNCH_CHECK();")
    return [line for line in lines[:end] if line.strip() and
            not line.startswith("  TORCH_CHECK(") and
            not re.match(r"  auto y\d+ = torch::empty\(", line)]


def _renamed(device, names):
    """The stage's kernels with its k-th input's pointer `x<k>` and loaded
    value `a<k>` named as the whole program names that input (`x3`, `a3`)
    or, for a buffer, `mid0` and `m0`."""
    def rename(match):
        name = names[int(match.group(2))]
        if match.group(1) == "x":
            return name
        if re.fullmatch(r"mid\d+", name):
            return f"m{name[3:]}"
        return f"a{name[1:]}" if re.fullmatch(r"x\d+", name) else f"{name}_value"
    # `a3_2`: the value at other coordinates too.
    return re.sub(r"\b([xa])(\d+)(?![0-9A-Za-z])", rename, device)


def _stage_source(emit, program, names):
    """(the stage's device code, its launch lines) from `emit` of the
    sub-program `program` whose inputs are named `names` (the program's
    `x<k>` and the buffers' `mid<k>`)."""
    signature = declaration(program, names)
    source = emit(program, signature)
    _, head = source_head(program, signature)
    if not source.startswith(head):
        raise ValueError("a stage's source does not open with its head")
    device = source[len(head):source.index(definition_head(signature))].strip("\n")
    return _renamed(device, names), _host_body(source, signature)


class _LastStageDeclined(Unsupported):
    """The last main op's emitter does not write the program's results."""


def emit(program, signature):
    """The CUDA source (kernels and `dice_forward` with exactly `signature`)
    computing `program`, a program of two or more stages. Raises
    Unsupported for programs it does not take."""
    stages = stages_of(program)
    if len(stages) < 2:
        raise Unsupported(f"{len(stages)} stage: a program of one family's emitter")
    fused = fuse_attention(program, stages)
    tries = [fused, stages] if len(fused) >= 2 and fused != stages else [stages]
    for n, attempt in enumerate(tries):
        try:
            return _emit_stages(program, signature, attempt)
        except Unsupported:
            if n == len(tries) - 1:
                raise


def _emit_stages(program, signature, stages):
    try:
        return _compose(program, signature, stages)
    except _LastStageDeclined:
        # Results not of the last main op's elements (its product with an
        # earlier layer's value, a cat of several layers): that main op is
        # stored too, and a stage of its own computes the results from the
        # buffers, an element a thread.
        return _compose(program, signature, stages + [("results", [])])


def _results(program, signature):
    """The results stage: each result computed at its elements from the
    buffers and inputs (through views, broadcasts, cats and pads), an
    element a thread; a kernel for all of them where they have as many
    elements, else one each."""
    names, head = source_head(program, signature)
    types = list(program["inputs"]) + [op["type"] for op in program["ops"]]
    in_params, out_params = kernel_parameters(program)
    host = HostFunction(program, signature, names)
    x_pointers = host.pointers[:len(program["inputs"])]
    y_pointers = host.pointers[len(program["inputs"]):]
    outputs = list(enumerate(program["outputs"]))
    counts = {math.prod(types[o]["shape"]) for _, o in outputs}
    groups = [outputs] if len(counts) == 1 else [[slot] for slot in outputs]
    kernels, launches = [], []
    for k, group in enumerate(groups):
        name = "results_kernel" if len(groups) == 1 else f"results_kernel{k}"
        part = {**program, "outputs": [o for _, o in group]}
        out = types[group[0][1]]["shape"]
        outs = [out_params[j] for j, _ in group]
        text = ValueEmitter(part).element_kernel(
            name, "// The results, a thread an element.", in_params + outs, out,
            [types[o]["dtype"] for _, o in group], lambda _names: [])
        for slot, (j, _) in enumerate(group):  # its y0.. are the results' own
            text = re.sub(rf"\by{slot}\[", f"y{j}[", text)
        text, pointers = used_parameters(text, name, in_params, outs, x_pointers)
        kernels.append(text)
        launches += [f"  const int64_t n{k} = {size_expression(out, wide=True)};" if len(groups) > 1
                     else f"  const int64_t n = {size_expression(out, wide=True)};"]
        n = f"n{k}" if len(groups) > 1 else "n"
        launches.append(f"  {name}<<<(int)std::min<int64_t>(({n} + 255) / 256, 65535), 256, 0, "
                        f"c10::cuda::getCurrentCUDAStream()>>>("
                        f"{', '.join(pointers + [y_pointers[j] for j, _ in group])});")
    return "\n".join([head, *kernels, host.text(launches)]) + "\n"


# The emitter of a stage of each family. A stage of reductions and norms
# is the staged reduction emitter's: one kernel, or several in turn; an
# attention stage (fuse_attention) the attention emitter's.
STAGE_EMITTERS = {"matmul": emit_matmul.emit, "conv": emit_conv.emit, "pool": emit_pool.emit,
                  "scan": emit_scan.emit, "reduction": emit_stages.emit,
                  "attention": emit_attention.emit, "results": _results}


def _compose(program, signature, stages):
    n_in = len(program["inputs"])
    names, head = source_head(program, signature)
    types = list(program["inputs"]) + [op["type"] for op in program["ops"]]
    anchors = {v: k for k, (_, values) in enumerate(stages) for v in values}
    # The main ops a later stage or a result reads: each one's buffer.
    stored = set()
    for v, k in anchors.items():
        stored |= {u for u in read_through(program, v, anchors) if anchors[u] < k}
    for o in program["outputs"]:
        read = read_through(program, o, anchors) | ({o} & set(anchors))
        stored |= {u for u in read if anchors[u] < len(stages) - 1}
    buffer = {v: f"mid{k}" for k, v in enumerate(sorted(stored))}
    taken = set(names) & set(buffer.values())
    if taken:
        raise Unsupported(f"parameters named like buffers: {sorted(taken)}")
    for v in buffer:
        if types[v]["dtype"] not in BUFFERS:
            raise Unsupported(f"a {types[v]['dtype']} main op read by a later stage")

    host = HostFunction(program, signature, names)
    device_parts, launches = [], []
    for v, name in buffer.items():
        storage = BUFFERS[types[v]["dtype"]]
        launches.append(buffer_allocation(name, types[v]["shape"], storage.kind, names[0]))
    for k, (family, values) in enumerate(stages):
        last = k == len(stages) - 1
        targets = list(program["outputs"]) if last else [v for v in values if v in buffer]
        if not targets:
            raise Unsupported(f"stage {k}: nothing of it is read")
        earlier = [v for v in buffer if anchors[v] < k]
        sub, sources = sub_program(program, targets, earlier)
        sub_names = [names[v] if v < n_in else buffer[v] for v in sources]
        try:
            device, body = _stage_source(STAGE_EMITTERS[family], sub, sub_names)
        except Unsupported as e:
            declined = _LastStageDeclined if last and family != "results" else Unsupported
            raise declined(f"stage {k} ({family}): {e}") from None
        results = ([f"y{j}" for j in range(len(targets))] if last else
                   [buffer[v] for v in targets])
        body = [re.sub(r"\by(\d+)\b", lambda m: results[int(m.group(1))], line)
                for line in body]
        what = ", ".join(sorted({program["ops"][v - n_in]["fn"] for v in values})) or family
        into = "the results" if last else ", ".join(results)
        device_parts.append(f"namespace stage{k} {{  // {what}\n\n{device}\n\n"
                            f"}}  // namespace stage{k}\n")
        launches += [f"  {{  // stage {k}: {what}, into {into}",
                     f"    using namespace stage{k};"]
        launches += [f"  {line}" for line in body] + ["  }"]
    return "\n".join([head, *device_parts, host.text(launches)]) + "\n"
