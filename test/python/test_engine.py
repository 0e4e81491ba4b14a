"""The data engine (python/dice/engine, docs/corpus.md "The data engine").

Oracles: the compiler itself (a drawn program, printed, exported with
torch-mlir and outlined, is the same request: fingerprint, signature and
prompt), PyTorch (the emitted kernels, run on the host, against the printed
reference program), and the verifier's static analysis."""

import json
import math
import random
import re
from collections import Counter

import numpy as np
import pytest
import torch

import engine_host
from build_tree import BIN
from dice.corpus.cuda_common import hole
from dice.engine.attention import MASKS, AttentionGrammar
from dice.engine.convolution import KINDS as CONVOLUTIONS, ConvolutionGrammar
from dice.engine.elementwise import UNARY, Grammar, _range
from dice.engine import emit_elementwise, emit_reduction
from dice.engine.emit_reduction import _linear, _unravel, lower_norms
from dice.engine.emit_stages import reduction_stages
from dice.engine.generate import (FAMILIES, HELDOUT_PAIRS, HELDOUT_PRIMITIVES, SFT_FIELDS,
                                  SPLITS, chunk_rows, class_of, data_dtype, generate, scaffold)
from dice.engine.layout import KINDS as MOVES, LayoutGrammar
from dice.engine.matmul import FORMS, MatmulGrammar
from dice.engine.normalization import NORMS, NormalizationGrammar
from dice.engine.pooling import PoolingGrammar
from dice.engine.emit_host import Unsupported, declaration
from dice.engine.program import FLOATS, ProgramBuilder, index_bounds, output_type
from dice.engine.losses import ELEMENTWISE_LOSSES, ROW_LOSSES
from dice.engine.reduction import LOSSES, REDUCTIONS, ReductionGrammar
from dice.engine.scan import KINDS as SCANS, ScanGrammar
from dice.engine.sample import emitter_of
from dice.engine.shapes import broadcast_pattern
from dice.train.prepare import program_requests

TOOL = BIN / "dice-scaffold-programs"


@pytest.fixture(scope="module")
def rows():
    # Two chunks of a seed no other test uses.
    return chunk_rows(17, 0, 300, TOOL)[0] + chunk_rows(17, 1, 300, TOOL)[0]


def test_drawn_programs_are_the_compilers(rows):
    """What the engine writes for a program is what the compiler writes for
    the program's PyTorch form: a random sample of each family, through the
    export path."""
    rng = random.Random(3)
    sample = [row for family in FAMILIES
              for row in rng.sample([r for r in rows if r["family"] == family], 3)]
    for row in sample:
        found = program_requests(row["pytorch_code"], "engine_sample")
        assert len(found) == 1, row["pytorch_code"]
        (request,) = found
        assert request["fingerprint"] == row["fingerprint"], row["pytorch_code"]
        assert request["signature"] == row["signature"]
        assert request["prefix"] == row["prefix"] and request["suffix"] == row["suffix"]
        assert request["python"] == row["reference"]


def grouped_form(program, used):
    """(kind, depthwise or grouped, bias, epilogue) of a drawn convolution
    with groups, None for one group."""
    (conv,) = [op for op in program["ops"] if op["fn"] == "conv"]
    (groups,) = conv["ints"]["groups"]
    if groups == 1:
        return None
    kind = next(u for u in used if u in CONVOLUTIONS)
    types = program["inputs"] + [op["type"] for op in program["ops"]]
    weight = types[conv["args"][1]]["shape"]  # [F, C/G, *K]
    depthwise = weight[0] == groups and weight[1] == 1  # G == F, C/G == 1 (so G == C)
    return (kind, "depthwise" if depthwise else "grouped",
            any(op["fn"] == "expand" for op in program["ops"]), used[-1] != kind)


def small(*shapes):
    """Whether every one of `shapes` is small: the host runs every CUDA
    thread in turn."""
    return all(math.prod(shape) <= 1 << 12 for shape in shapes)


def sample_forms(draw, count, form_of, per_form=2):
    """`count` programs of `draw()`, at most `per_form` of each form that
    `form_of(program, used)` names (None or False: not wanted)."""
    drawn, forms = [], Counter()
    while len(drawn) < count:
        program, used = draw()
        form = form_of(program, used)
        if not form or forms[form] == per_form:
            continue
        forms[form] += 1
        drawn.append(program)
    return drawn


@pytest.fixture(scope="module")
def grouped_rows():
    """Two small convolutions of each grouped and depthwise form: 1-D and
    2-D, with and without a bias, returned or read by an epilogue (the
    forms the compiler renders differently), as rows with their kernels."""
    grammar = ConvolutionGrammar(random.Random(11))
    drawn = sample_forms(grammar.draw, 32, lambda program, used: small(
        program["inputs"][0]["shape"]) and grouped_form(program, used))
    return engine_rows(drawn, "grouped", "convolution")


def engine_rows(drawn, name, families):
    """The drawn programs as rows with their kernels, each written by the
    emitter of its family (`families`: one a program, or one for all)."""
    if isinstance(families, str):
        families = [families] * len(drawn)
    return [{"id": f"{name}-{n}", "family": family, "program": s["program"],
             "reference": s["reference"], "signature": s["signature"],
             "fingerprint": s["fingerprint"], "prefix": s["prefix"], "suffix": s["suffix"],
             "middle": hole(FAMILIES[family][1](program, s["signature"]))}
            for n, (family, program, s) in enumerate(zip(families, drawn,
                                                         scaffold(drawn, TOOL)))]


@pytest.fixture(scope="module")
def conv3d_rows():
    """Small 3-D convolutions (one group): with and without a bias, padded,
    strided and dilated, returned or read by an epilogue."""
    grammar = ConvolutionGrammar(random.Random(13), exclude=(
        "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"))

    def form(program, used):
        (conv,) = [op for op in program["ops"] if op["fn"] == "conv"]
        if not small(conv["type"]["shape"], *(t["shape"] for t in program["inputs"])):
            return None
        return (any(op["fn"] == "expand" for op in program["ops"]),
                any(op["fn"] == "pad" for op in program["ops"]),
                max(conv["ints"]["stride"] + conv["ints"]["dilation"]) > 1,
                used[-1] != "conv3d")

    drawn = sample_forms(grammar.draw, 12, form, per_form=1)
    return engine_rows(drawn, "conv3d", "convolution")


def test_a_kernels_results_declare_each_value_once():
    """Two results of a convolution's epilogue, one read by the other: the
    kernel computes both in one loop body, so each C variable there is
    declared once (the values both read were declared a result at a time,
    a compile error on the GPU)."""
    import re
    from dice.engine import emit_conv
    grammar = ConvolutionGrammar(random.Random(3))
    checked = 0
    while checked < 5:
        program, _ = grammar.draw()
        n = len(program["inputs"])
        ops = program["ops"]
        conv = next(i for i, op in enumerate(ops) if op["fn"] == "conv")
        last = len(ops) - 1
        # The last op and the one it reads, both of the convolution's size.
        if last - conv < 2 or n + last - 1 not in ops[last]["args"] or any(
                math.prod(ops[i]["type"]["shape"]) != math.prod(ops[conv]["type"]["shape"])
                for i in (last - 1, last)):
            continue
        program["outputs"] = [n + last - 1, n + last]
        signature = "std::vector<torch::Tensor> dice_forward(" + ", ".join(
            f"torch::Tensor x{i}" for i in range(n)) + ")"
        try:
            source = emit_conv.emit(program, signature)
        except emit_conv.Unsupported:
            continue
        body = source[source.index("conv_kernel("):]
        declared = re.findall(r"^    (?:const )?\w+ (\w+) =", body, re.MULTILINE)
        assert len(declared) == len(set(declared)), source
        checked += 1


def per_channel(program):
    """Whether a program reads a vector along a dim other than the last
    (`w.view(1, -1, 1, 1)`): a reshape of a vector to a higher rank whose
    size stands before the last dim."""
    types = program["inputs"] + [op["type"] for op in program["ops"]]
    return any(op["fn"] == "reshape" and len(types[op["args"][0]]["shape"]) == 1 and
               len(op["type"]["shape"]) > 1 and op["type"]["shape"][-1] == 1 and
               types[op["args"][0]]["shape"][0] > 1 for op in program["ops"])


@pytest.fixture(scope="module")
def per_channel_rows():
    """Small programs that scale or shift along a channel: batch norms in
    eval mode (every dtype, with and without weight and bias) and
    elementwise programs with a per-channel operand, as rows with their
    kernels."""
    norms = NormalizationGrammar(random.Random(19),
                                 exclude=[n for n in NORMS if n != "batch_norm"])
    elementwise = Grammar(random.Random(23))

    def form(program, used):
        if per_channel(program) and small(output_type(program)["shape"]):
            return program["inputs"][0]["dtype"], len(program["inputs"])
        return None

    drawn = sample_forms(norms.draw, 12, form) + sample_forms(elementwise.draw, 12, form)
    return engine_rows(drawn, "per-channel", ["normalization"] * 12 + ["elementwise"] * 12)


@pytest.fixture(scope="module")
def slice_rows():
    """Small slices of 1-3 dims (a chain of one-dim slices) of every dtype,
    as rows with their kernels."""
    grammar = LayoutGrammar(random.Random(41), exclude=[k for k in MOVES if k != "slice"])
    drawn = sample_forms(grammar.draw, 12, lambda program, used: small(
        output_type(program)["shape"]) and (sum(op["fn"] == "slice" for op in program["ops"]),
                                            program["inputs"][0]["dtype"]))
    return engine_rows(drawn, "slice", "layout")


def test_multi_dim_slices_are_the_compilers(slice_rows):
    """A subscript that slices several dims, as the compiler renders it:
    one slice per dim, in dim order."""
    assert {sum(op["fn"] == "slice" for op in r["program"]["ops"]) for r in slice_rows} == \
        {1, 2, 3}
    assert_the_compilers(slice_rows)


def test_multi_dim_slice_kernels_compute_the_reference_program(slice_rows, tmp_path):
    """A chain of slices reads the source element at the composed offsets
    and strides."""
    assert_each_agrees_on_host(slice_rows, "layout", tmp_path)


@pytest.fixture(scope="module")
def instance_rows():
    """Small instance norms of every dtype and spatial rank, with and
    without weight and bias, as rows with their kernels."""
    norms = NormalizationGrammar(random.Random(37),
                                 exclude=[n for n in NORMS if n != "instance_norm"])
    drawn = sample_forms(norms.draw, 12, lambda program, used: small(
        program["inputs"][0]["shape"]) and (program["inputs"][0]["dtype"],
                                            len(program["inputs"][0]["shape"]),
                                            len(program["inputs"])))
    return engine_rows(drawn, "instance", "normalization")


def test_instance_norms_are_the_compilers(instance_rows):
    """F.instance_norm as the compiler renders torch's decomposition: float64
    and float32 sums over the `[1, N*C, *S]` view and the view back."""
    assert any(len(r["program"]["inputs"]) == 3 for r in instance_rows)
    assert {r["program"]["inputs"][0]["dtype"] for r in instance_rows} == {
        "float32", "float16", "bfloat16"}
    assert_the_compilers(instance_rows)


def test_instance_norm_kernels_compute_the_reference_program(instance_rows, tmp_path):
    """Each (sample, channel) row is normalized by its own statistics."""
    assert_each_agrees_on_host(instance_rows, "normalization", tmp_path)


def test_per_channel_programs_are_the_compilers(per_channel_rows):
    assert_the_compilers(per_channel_rows)


def test_per_channel_kernels_compute_the_reference_program(per_channel_rows, tmp_path):
    """A channel's statistics and scales are read at the output element's
    channel, by the elementwise kernel's views."""
    checked = check_on_host(per_channel_rows, tmp_path)
    assert checked["normalization"] == 36 and checked["elementwise"] == 36, checked
    assert all("fused_kernel" in r["middle"] for r in per_channel_rows)


@pytest.fixture(scope="module")
def gather_rows():
    """Small gathers (embeddings; index_select and torch.gather along any
    dim) of every source dtype, with and without an epilogue, as rows with
    their kernels."""
    grammar = LayoutGrammar(random.Random(31), exclude=("cat", "permute", "slice", "pad"))
    drawn = sample_forms(grammar.draw, 18, lambda program, used: small(
        output_type(program)["shape"]) and (used[0], program["inputs"][1]["dtype"], len(used) > 1))
    return engine_rows(drawn, "gather", "layout")


def test_gathers_are_the_compilers(gather_rows):
    """F.embedding, index_select and torch.gather as the compiler renders
    them (its folds make the printed program its own reference), the
    indices drawn in the range of the dim they index, by the printed
    get_inputs (the compiler's rule) and by the engine's bounds (its rule
    in Python)."""
    assert_the_compilers(gather_rows)
    for row in gather_rows:
        program = row["program"]
        (index,) = [op for op in program["ops"] if op["fn"] == "index"]
        source = program["inputs"][index["args"][0]]["shape"]
        n_in = len(program["inputs"])
        # The dim whose index is input 0 (the others are aranges).
        (dim,) = [k for k, a in enumerate(index["args"][1:])
                  if a < n_in or program["ops"][a - n_in]["fn"] != "arange"]
        assert index_bounds(program) == [source[dim]] + [0] * (n_in - 1)
        assert f"torch.randint(0, {source[dim]}, " in row["reference"]


def test_gather_kernels_compute_the_reference_program(gather_rows, tmp_path):
    """A gather's kernel reads the source element its indices name."""
    assert_each_agrees_on_host(gather_rows, "layout", tmp_path)


@pytest.fixture(scope="module")
def staged_rows():
    """Small reductions of a reduction's result (two kernels and a buffer
    between them): every dtype, each kind of second reduction."""
    grammar = ReductionGrammar(random.Random(41), exclude=LOSSES)

    def form(program, used):
        if len(reduction_stages(lower_norms(program))) < 2 or not small(
                program["inputs"][0]["shape"]):
            return None
        last = [u for u in used if u in REDUCTIONS][-1]
        return program["inputs"][0]["dtype"], last

    drawn = sample_forms(grammar.draw, 18, form, per_form=1)
    return engine_rows(drawn, "staged", "reduction")


def test_staged_reductions_are_the_compilers(staged_rows):
    assert_the_compilers(staged_rows)


def test_staged_kernels_compute_the_reference_program(staged_rows, tmp_path):
    """Each stage a kernel: the first stores its results in buffers of
    their own shape, the second reads them where it needs them."""
    assert all("reduce_stage1" in r["middle"] and "auto w0 = torch::empty" in r["middle"]
               for r in staged_rows)
    assert_each_agrees_on_host(staged_rows, "reduction", tmp_path)


@pytest.fixture(scope="module")
def row_loss_rows():
    """Small losses of the kinds that reduce rows first (cross entropy,
    cosine embedding, triplet margin) and the hinge embedding loss: every
    dtype, with and without a prologue and an epilogue."""
    grammar = ReductionGrammar(random.Random(43))

    def drawer(kind):
        def draw():
            grammar.used, grammar.losses = [], [kind]
            return grammar.draw_loss()
        return draw

    drawn = []
    for kind in ROW_LOSSES + ("hinge_embedding_loss",):
        drawn += sample_forms(drawer(kind), 6, lambda program, used: all(
            small(i["shape"]) for i in program["inputs"]) and (
                program["inputs"][-1]["dtype"], len(used), len(program["ops"])), per_form=1)
    return engine_rows(drawn, "loss", "reduction")


def test_row_losses_are_the_compilers(row_loss_rows):
    """Each loss as the compiler renders its printed program: a cross
    entropy's log-softmax gathered at the targets, a clamp as a float64
    comparison and a select, an eps as the dtype holds it."""
    assert sum("torch.log_softmax(" in r["reference"] for r in row_loss_rows) == 6
    assert_the_compilers(row_loss_rows)


def test_row_loss_kernels_compute_the_reference_program(row_loss_rows, tmp_path):
    """The row losses in two stages (rows, then the rows' terms), the
    hinge loss in one."""
    assert sum("reduce_stage1" in r["middle"] for r in row_loss_rows) == 18
    assert_each_agrees_on_host(row_loss_rows, "reduction", tmp_path)


@pytest.fixture(scope="module")
def scan_rows():
    """Small cumulative sums and products of every dtype, with masks,
    exclusive sums and other prologues and epilogues, some rows longer
    than a block's 64 threads."""
    grammar = ScanGrammar(random.Random(53))
    drawn = sample_forms(grammar.draw, 16, lambda program, used: small(
        program["inputs"][0]["shape"]) and (program["inputs"][0]["dtype"], used[-1] in SCANS,
                                            "mask" in used, "exclusive" in used), per_form=1)
    return engine_rows(drawn, "scan", "scan")


def test_scans_are_the_compilers(scan_rows):
    """torch.cumsum and torch.cumprod as the compiler renders them (the
    dtype named only where torch's default is another)."""
    assert all("torch.cum" in r["reference"] for r in scan_rows)
    assert_the_compilers(scan_rows)


def test_scan_kernels_compute_the_reference_program(scan_rows, tmp_path):
    """A block scans its row chunk by chunk, the carry between chunks."""
    scans = [op for r in scan_rows for op in r["program"]["ops"] if op["fn"] in SCANS]
    longest = max(op["type"]["shape"][op["ints"]["dim"][0]] for op in scans)
    assert longest > 64, longest
    assert_each_agrees_on_host(scan_rows, "scan", tmp_path)


@pytest.fixture(scope="module")
def reversed_scan_rows():
    """Small reversed scans (`cumsum(x.flip(d), d).flip(d)`) of every dtype
    and kind, exclusive ones among them."""
    grammar = ScanGrammar(random.Random(59))
    drawn = sample_forms(grammar.draw, 9, lambda program, used: "reversed" in used and small(
        program["inputs"][0]["shape"]) and (program["inputs"][0]["dtype"], "exclusive" in used,
                                            "cumsum" in used), per_form=1)
    return engine_rows(drawn, "reversed", "scan")


def test_reversed_scans_are_the_compilers(reversed_scan_rows):
    """A flip as the compiler renders it: the value indexed by an arange
    along each dim, reversed along the scanned one."""
    assert all("torch.arange(" in r["reference"] and "torch.sub(" in r["reference"]
               for r in reversed_scan_rows)
    assert_the_compilers(reversed_scan_rows)


def test_reversed_scan_kernels_compute_the_reference_program(reversed_scan_rows, tmp_path):
    """The scan reads its operand from the row's other end; the results,
    which read the scan there too, come from a second kernel over the scan
    stored in a buffer."""
    assert all("results_kernel<<<" in r["middle"] and "auto w0 = torch::empty" in r["middle"]
               for r in reversed_scan_rows)
    assert_each_agrees_on_host(reversed_scan_rows, "scan", tmp_path)


@pytest.fixture(scope="module")
def any_all_rows():
    """Small `(x > t).any(dim)` and `(x < -t).all(dim)` of every dtype, some
    reduced again (their result in a bool buffer between two stages), and
    L1 and L2 norms."""
    grammar = ReductionGrammar(random.Random(79))
    grammar.reductions, grammar.losses = ["any", "all", "norm"], []
    drawn = sample_forms(grammar.draw, 15, lambda program, used: small(
        program["inputs"][0]["shape"]) and (program["inputs"][0]["dtype"],
                                            next(u for u in used if u in grammar.reductions),
                                            len(reduction_stages(program)) > 1), per_form=1)
    return engine_rows(drawn, "any-all", "reduction")


def test_any_all_and_norms_are_the_compilers(any_all_rows):
    """A boolean reduction as torch.any or torch.all of one dim, which
    torch-mlir lowers back to the `or` or `and` reduction it came from; a
    norm as `abs`, an integral power, a sum and a root."""
    assert sum("torch.any(" in r["reference"] or "torch.all(" in r["reference"]
               for r in any_all_rows) >= 8
    assert sum("torch.pow(" in r["reference"] for r in any_all_rows) >= 4
    assert_the_compilers(any_all_rows)


def test_any_all_and_norm_kernels_compute_the_reference_program(any_all_rows, tmp_path):
    assert any("reduce_stage1" in r["middle"] and "bool" in r["middle"] for r in any_all_rows)
    assert_each_agrees_on_host(any_all_rows, "reduction", tmp_path)


def test_the_scan_grammar_covers_its_classes():
    grammar = ScanGrammar(random.Random(0))
    used, dtypes, last_dim = Counter(), Counter(), Counter()
    for _ in range(400):
        program, productions = grammar.draw()
        used.update(productions)
        (scan,) = [op for op in program["ops"] if op["fn"] in SCANS]
        dtypes[scan["type"]["dtype"]] += 1
        last_dim[scan["ints"]["dim"][0] == len(scan["type"]["shape"]) - 1] += 1
    assert set(SCANS) <= set(used) and min(used[p] for p in ("mask", "exclusive",
                                                              "reversed")) > 20, used
    assert set(dtypes) == {"float32", "float16", "bfloat16"}
    assert min(last_dim.values()) > 50, last_dim  # rows along the last dim and others


def test_offsets_rejoin_what_was_unravelled():
    """A block's kept index and a thread's reduced index, unravelled over
    their dims and laid out in a shape: the offset is the element's own
    (numpy's ravel, the oracle, over every coordinate), and a run of dims
    one index was unravelled over is written as that index, not as its
    coordinates put back together."""
    rng = random.Random(4)
    for _ in range(200):
        shape = [rng.choice([1, 2, 3, 5, 8]) for _ in range(rng.randint(1, 5))]
        dims = sorted(rng.sample(range(len(shape)), rng.randint(1, len(shape))))
        kept = [d for d in range(len(shape)) if d not in dims]
        k_coords = dict(zip(kept, _unravel("k", [shape[d] for d in kept])))
        r_coords = dict(zip(dims, _unravel("r", [shape[d] for d in dims])))
        coords = [k_coords.get(d, r_coords.get(d)) for d in range(len(shape))]
        offset = _linear(coords, shape)
        n_k, n_r = math.prod(shape[d] for d in kept), math.prod(shape[d] for d in dims)
        for k, r in {(rng.randrange(n_k), rng.randrange(n_r)) for _ in range(10)}:
            where = [0] * len(shape)
            where_k = np.unravel_index(k, [shape[d] for d in kept]) if kept else ()
            where_r = np.unravel_index(r, [shape[d] for d in dims])
            for d, c in zip(kept, where_k):
                where[d] = int(c)
            for d, c in zip(dims, where_r):
                where[d] = int(c)
            want = int(np.ravel_multi_index(where, shape))
            # Every term is non-negative, so C's / is Python's //.
            assert eval(offset.replace("/", "//"), {"k": k, "r": r}) == want, (shape, dims,
                                                                              offset)
        sized = [d for d in range(len(shape)) if shape[d] != 1]
        run = [i for i, d in enumerate(sized) if d in dims]
        if len(run) > 1 and run == list(range(run[0], run[-1] + 1)):  # one run of dims
            assert "(r) %" not in offset, (shape, dims, offset)


def test_a_matmul_is_not_computed_inside_another_matmuls_loop():
    """A reduction of (x @ w1) @ w2 would compute the inner matmul again at
    every step of the outer one's loop (a chain of n matmuls: work to the
    n-th power, an unrolled recurrence's): the emitters decline it."""
    b = ProgramBuilder()
    x, w1, w2 = b.input((4, 6), "float32"), b.input((6, 5), "float32"), b.input((5, 3), "float32")
    program = b.build([b.reduce("sum", b.matmul(b.matmul(x, w1), w2), [1])])
    for family in ("reduction", "normalization"):
        with pytest.raises(Unsupported, match="inside another matmul's loop"):
            FAMILIES[family][1](program, declaration(program))


def test_reductions_fall_into_stages_by_shape_dims_and_order():
    """A reduction joins the stage of its operand's shape and dims, after
    every stage it reads: a softmax's max and sum share one, the sum over
    the rows of its result another, and a sum of the input over all dims
    that reads no reduction a third of its own."""
    x = {"shape": [4, 6], "dtype": "float32"}

    def op(fn, args, shape, dims=None):
        return {"fn": fn, "args": args, "type": {"shape": shape, "dtype": "float32"},
                **({"ints": {"dims": dims}} if dims is not None else {})}

    program = {"inputs": [x], "ops": [
        op("amax", [0], [4], [1]),                  # 1
        op("reshape", [1], [4, 1]),                 # 2
        op("sub", [0, 2], [4, 6]),                  # 3
        op("sum", [3], [4], [1]),                   # 4: reads 1, same key: stage 0
        op("sum", [4], [], [0]),                    # 5: reads 4: stage 1
        op("sum", [0], [], [0, 1]),                 # 6: reads none, its own key: stage 2
        op("add", [5, 6], []),                      # 7
    ], "outputs": [7]}
    assert reduction_stages(program) == [[1, 4], [5], [6]]


def assert_the_compilers(rows):
    """Each row's reference program, exported with torch-mlir and outlined,
    is the same request: prompt, signature and fingerprint."""
    for row in rows:
        (request,) = program_requests(row["reference"], "engine_sample")
        assert request["python"] == row["reference"]
        assert request["fingerprint"] == row["fingerprint"], row["reference"]
        assert request["signature"] == row["signature"]
        assert request["prefix"] == row["prefix"] and request["suffix"] == row["suffix"]


def test_grouped_convolutions_are_the_compilers(grouped_rows):
    """Grouped and depthwise convolutions of every form through the export
    path: torch-mlir lowers the two differently (a `[N, G, C/G, *S]` view
    or its depthwise op) and the compiler renders each back in its own
    order of views."""
    assert_the_compilers(grouped_rows)


def test_conv3d_is_the_compilers(conv3d_rows):
    """3-D convolutions through the export path: the compiler renders them
    as `F.conv3d`, with the 2-D one's pad and bias."""
    assert all("torch.nn.functional.conv3d(" in r["reference"] for r in conv3d_rows)
    assert_the_compilers(conv3d_rows)


def test_kernels_compute_the_reference_program(rows, tmp_path):
    """Every kernel of a sample, run on the host over every element (its
    vector path too), against PyTorch running the printed program, on the
    verifier's input distributions."""
    # Small programs: the host runs every CUDA thread in turn.
    limit = {"elementwise": 1 << 14, "pooling": 1 << 16, "layout": 1 << 14,
             "convolution": 1 << 12, "scan": 1 << 13}
    small = [r for r in rows if math.prod(r["program"]["inputs"][0]["shape"]) <=
             limit.get(r["family"], 1 << 11) or r["family"] == "matmul"
             and math.prod(r["program"]["ops"][-1]["type"]["shape"]) <= 4096
             or r["family"] == "attention" and attention_work(r["program"]) <= 1 << 17]
    sample = [r for family, count in (("elementwise", 60), ("reduction", 30),
                                      ("normalization", 30), ("matmul", 10), ("pooling", 10),
                                      ("layout", 20), ("convolution", 10), ("scan", 10),
                                      ("attention", 10))
              for r in [r for r in small if r["family"] == family][:count]]
    checked = check_on_host(sample, tmp_path)
    sampled = Counter(r["family"] for r in sample)
    assert all(checked[f] == 3 * n and n >= 5 for f, n in sampled.items()), checked
    # The corpus's chains are a model's layers, too large for the host: the
    # chains of test_engine_chain.py are drawn small for it.
    assert set(sampled) == set(FAMILIES) - {"chain"} and checked["elementwise vector"] >= 15, \
        checked


def attention_work(program):
    """Queries x keys x width: the multiply-adds of an attention's scores."""
    queries, keys = program["inputs"][0]["shape"], program["inputs"][1]["shape"]
    return math.prod(queries) * keys[-2]


@pytest.fixture(scope="module")
def attention_rows():
    """Small attentions of many forms: 3-D and 4-D, with no mask, a causal
    mask, an additive padding mask or both, rows of keys shorter and
    longer than a block's threads, in float32 and half precision."""
    grammar = AttentionGrammar(random.Random(61))
    drawn = sample_forms(grammar.draw, 24, lambda program, used: attention_work(
        program) <= 1 << 16 and (len(program["inputs"][0]["shape"]),
                                 tuple(u for u in used if u in MASKS),
                                 program["inputs"][1]["shape"][-2] > 64,
                                 program["inputs"][0]["dtype"]), per_form=1)
    return engine_rows(drawn, "attention", "attention")


def test_attention_is_the_compilers(attention_rows):
    """Attention as the compiler renders it: k's transpose a permute, a
    4-D matmul the 3-D one of views, a causal mask compared coordinates."""
    assert sum("torch.arange(" in r["reference"] for r in attention_rows) >= 4
    assert_the_compilers(attention_rows)


def test_attention_kernels_compute_the_reference_program(attention_rows, tmp_path):
    """A block a query: the scores, their softmax and the values' weighted
    sum in one kernel, rows longer than the block's 64 threads among them."""
    longest = max(r["program"]["inputs"][1]["shape"][-2] for r in attention_rows)
    assert longest > 64, longest
    assert all(r["middle"].count("__global__") == 1 for r in attention_rows)
    assert_each_agrees_on_host(attention_rows, "attention", tmp_path)


def test_the_attention_grammar_covers_its_forms():
    grammar = AttentionGrammar(random.Random(0))
    seen, ranks, square, dtypes = Counter(), Counter(), Counter(), Counter()
    for _ in range(300):
        program, productions = grammar.draw()
        seen.update(productions)
        dtypes[program["inputs"][0]["dtype"]] += 1
        q, k = program["inputs"][0]["shape"], program["inputs"][1]["shape"]
        ranks[len(q)] += 1
        square[q[-2] == k[-2]] += 1
    assert min(seen[m] for m in MASKS) > 50, seen
    assert set(ranks) == {3, 4} and min(square.values()) > 50, (ranks, square)
    assert set(dtypes) == set(FLOATS) and min(dtypes.values()) > 50, dtypes
    assert sum(seen[p] for p in seen if p not in MASKS + ("attention",)) > 100, seen


@pytest.fixture(scope="module")
def transposed_rows():
    """Small transposed convolutions of 1-3 spatial dims: strides 1-3,
    paddings, output paddings, with and without a bias, a prologue and an
    epilogue."""
    grammar = ConvolutionGrammar(random.Random(67))
    spatial = iter(range(10 ** 6))

    def draw():
        grammar.used = []
        return grammar.draw_transposed(1 + next(spatial) % 3)

    drawn = sample_forms(draw, 14, lambda program, used: small(
        program["inputs"][0]["shape"]) and math.prod(program["inputs"][1]["shape"]) <= 1024 and (
            next(len(op["type"]["shape"]) for op in program["ops"] if op["fn"] == "conv"),
            not used[0].startswith("conv_transpose"), not used[-1].startswith("conv_transpose"),
            any(op["fn"] == "expand" for op in program["ops"]),
            any(op["fn"] == "insert_slice" for op in program["ops"])), per_form=1)
    return engine_rows(drawn, "transposed", "convolution")


@pytest.fixture(scope="module")
def half_conv_rows():
    """Small half-precision convolutions: 1-3 spatial dims, with and
    without a bias, float16 and bfloat16."""
    grammar = ConvolutionGrammar(random.Random(73))
    drawn = sample_forms(grammar.draw, 10, lambda program, used: program["inputs"][0][
        "dtype"] != "float32" and small(*(i["shape"] for i in program["inputs"])) and (
            program["inputs"][0]["dtype"], next(u for u in used if u in CONVOLUTIONS),
            any(op["fn"] == "expand" for op in program["ops"])), per_form=1)
    return engine_rows(drawn, "half-conv", "convolution")


def test_half_convolutions_are_the_compilers(half_conv_rows):
    """A half-precision convolution as a float32 one of casts, cast back."""
    assert all(".to(torch.float32)" in r["reference"] for r in half_conv_rows)
    assert_the_compilers(half_conv_rows)


def test_half_convolution_kernels_compute_the_reference_program(half_conv_rows, tmp_path):
    assert_each_agrees_on_host(half_conv_rows, "convolution", tmp_path)


def test_transposed_convolutions_are_the_compilers(transposed_rows):
    """As the compiler renders `F.conv_transpose{1,2,3}d`: a convolution
    over the input written into zeros (one strided write of all dims), of a
    weight indexed by aranges (channels swapped, window reversed)."""
    ranks = set()
    for r in transposed_rows:
        spread = sum(op["fn"] == "insert_slice" for op in r["program"]["ops"])
        assert spread <= 1 and r["reference"].count(".clone()") == spread
        assert "torch.arange(" in r["reference"]
        ranks.update(len(op["type"]["shape"]) for op in r["program"]["ops"] if op["fn"] == "conv")
    assert ranks == {3, 4, 5}
    assert_the_compilers(transposed_rows)


def test_transposed_kernels_compute_the_reference_program(transposed_rows, tmp_path):
    """The kernel reads an input element only where the spread-out input
    holds one, zero elsewhere."""
    assert all(emitter_of(r).startswith("convolution-transposed") for r in transposed_rows if any(
        op["fn"] == "insert_slice" for op in r["program"]["ops"]))  # else a convolution
    assert_each_agrees_on_host(transposed_rows, "convolution", tmp_path)


def test_grouped_kernels_compute_the_reference_program(grouped_rows, tmp_path):
    """Each output channel of a grouped or depthwise convolution reads only
    its group's input channels."""
    assert_each_agrees_on_host(grouped_rows, "convolution", tmp_path)


def test_conv3d_kernels_compute_the_reference_program(conv3d_rows, tmp_path):
    """A 3-D convolution's kernel walks the three dims of its window."""
    assert_each_agrees_on_host(conv3d_rows, "convolution", tmp_path)


def assert_each_agrees_on_host(rows, family, tmp_path):
    """Every row's kernel (all of `family`) agrees with PyTorch on the host
    on each of the three input distributions."""
    checked = check_on_host(rows, tmp_path)
    assert checked[family] == 3 * len(rows), checked


def check_on_host(sample, tmp_path):
    """Runs every row's kernel on the host against PyTorch running its
    printed program, on three input distributions (the verifier's): how
    many runs of each family (and of its vector path) agreed, three a row."""
    if not engine_host.available():
        pytest.skip(f"no CUDA half-precision headers at {engine_host.CUDA_INCLUDE}")
    library = engine_host.build(sample, tmp_path)
    generator = torch.Generator().manual_seed(0)
    draws = {
        "normal": lambda s: torch.randn(s, generator=generator),
        "heavy": lambda s: (torch.randn(s, generator=generator) / torch.rand(
            s, generator=generator).clamp(0.01, 1).sqrt()).clamp(-100, 100),
        "uniform(1, 2)": lambda s: 1 + torch.rand(s, generator=generator),
    }
    checked = Counter()
    for index, row in enumerate(sample):
        model = engine_host.reference_model(row)
        bounds = index_bounds(row["program"])
        for name, draw in draws.items():
            inputs = [torch.randint(0, bound, i["shape"], generator=generator) if bound else
                      torch.rand(i["shape"], generator=generator) < 0.5  # a mask
                      if i["dtype"] == "bool" else
                      draw(i["shape"]).to(engine_host.TORCH_DTYPES[i["dtype"]])
                      for i, bound in zip(row["program"]["inputs"], bounds)]
            expected = model(*inputs)
            expected = expected if isinstance(expected, tuple) else (expected,)
            for vector in (False, True) if "fused_kernel_vec4" in row["middle"] else (False,):
                got = engine_host.run(library, index, row, inputs, vector)
                for want, have in zip(expected, got):
                    assert have.dtype == want.dtype and have.shape == want.shape
                    tol = 1e-4 if want.dtype == torch.float32 else 1e-2
                    scale = max(1.0, want.double().abs().nan_to_num(0, 0, 0).max().item())
                    assert torch.allclose(have.double(), want.double(), rtol=tol,
                                          atol=tol * scale, equal_nan=True), \
                        (row["id"], name, vector, row["reference"])
                checked[row["family"] + (" vector" if vector else "")] += 1
    return checked


def test_every_answer_declares_its_requests_signature(rows):
    for row in rows:
        head = row["signature"].strip().rstrip(";")
        assert head + " {" in row["middle"], row["id"]
        assert row["cuda_code"] == row["prefix"] + row["middle"] + row["suffix"]
        assert row["middle"].startswith('source = """\n') and row["middle"].endswith('"""')


def test_every_value_an_answer_names_is_named_in_its_prompt(rows):
    """The prompt determines the kernel's names: each `t<k>` of an answer is
    a value the reference program names, so a model never has to count
    values the prompt does not show (a number it writes into a call)."""
    for row in rows:
        named = set(re.findall(r"\b([tx]\d+)\b", row["reference"]))
        used = set(re.findall(r"\b([tx]\d+)\b", row["middle"]))
        assert used <= named, (row["id"], sorted(used - named), row["reference"])


@pytest.fixture(scope="module")
def mask_rows():
    """Small elementwise programs with a mask argument (a bool input)."""
    grammar = Grammar(random.Random(43))
    drawn = sample_forms(grammar.draw, 8, lambda program, used: small(
        *(i["shape"] for i in program["inputs"])) and "bool" in {
        i["dtype"] for i in program["inputs"]} and (program["inputs"][0]["dtype"],
                                                    len(program["inputs"])), per_form=3)
    return engine_rows(drawn, "mask", "elementwise")


def test_masks_are_the_compilers(mask_rows):
    """where(mask, v, w) and masked fills of a bool argument, broadcast or
    not, as the compiler renders them."""
    assert_the_compilers(mask_rows)


def test_mask_kernels_compute_the_reference_program(mask_rows, tmp_path):
    """A bool argument is read as it is stored and selects per element."""
    assert_each_agrees_on_host(mask_rows, "elementwise", tmp_path)


MASKED_ATTENTION = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v, mask):
        scores = (q @ k.transpose(-1, -2) * 0.25).masked_fill(mask, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v


def get_inputs():
    return [torch.randn(2, 6, 16), torch.randn(2, 7, 16), torch.randn(2, 7, 8),
            torch.rand(2, 6, 7) > 0.7]


def get_init_inputs():
    return []
"""


def test_an_attention_with_a_mask_argument_computes_it(tmp_path):
    """A user's attention masked by a bool argument, as the compiler makes
    its request: the attention emitter reads the mask as stored and its
    kernel agrees with the printed program on the host (every row keeps a
    key, so no row's softmax is of -inf alone)."""
    (request,) = program_requests(MASKED_ATTENTION, "masked_attention")
    program, signature = request["program"], request["signature"]
    assert "bool" in {i["dtype"] for i in program["inputs"]}
    row = {"id": "masked-attention", "family": "attention", "program": program,
           "reference": request["python"], "signature": signature,
           "middle": hole(FAMILIES["attention"][1](program, signature))}
    if not engine_host.available():
        pytest.skip(f"no CUDA half-precision headers at {engine_host.CUDA_INCLUDE}")
    library = engine_host.build([row], tmp_path)
    model = engine_host.reference_model(row)
    generator = torch.Generator().manual_seed(5)
    inputs = []
    for t in program["inputs"]:
        if t["dtype"] == "bool":
            mask = torch.rand(t["shape"], generator=generator) < 0.4
            mask[..., 0] = False
            inputs.append(mask)
        else:
            inputs.append(torch.randn(t["shape"], generator=generator))
    (got,) = engine_host.run(library, 0, row, inputs)
    torch.testing.assert_close(got, model(*inputs), rtol=1e-4, atol=1e-5)


def test_the_grammar_covers_its_classes():
    grammar = Grammar(random.Random(0))
    used, dtypes, ranks, patterns = Counter(), Counter(), Counter(), Counter()
    masks = 0
    for _ in range(3000):
        program, productions = grammar.draw()
        used.update(productions)
        dtypes[data_dtype(program)] += 1
        masks += any(i["dtype"] == "bool" for i in program["inputs"])
        out = output_type(program)["shape"]
        ranks[len(out)] += 1
        for i in program["inputs"]:
            shape = i["shape"]
            patterns["same" if shape == out else "lower rank" if len(shape) < len(out)
                     else "ones"] += 1
    assert len(UNARY) >= 40 and set(UNARY) <= set(used)
    assert {"add", "sub", "mul", "div", "maximum", "minimum", "pow", "atan2", "where",
            "lerp", "cast"} <= set(used)
    assert set(dtypes) == {"float32", "float16", "bfloat16"}
    assert masks > 100, masks  # where(mask, ...) of a bool argument
    assert set(ranks) == {1, 2, 3, 4, 5}
    assert min(patterns.values()) > 100, patterns


def test_the_reduction_grammar_covers_its_classes():
    grammar = ReductionGrammar(random.Random(0))
    used, keepdim, multi, stages = Counter(), 0, 0, Counter()
    for _ in range(1500):
        program, productions = grammar.draw()
        used.update(productions)
        stages[len(reduction_stages(lower_norms(program)))] += 1
        reducing = [op for op in program["ops"] if op["fn"] in REDUCTIONS]
        out = output_type(program)["shape"]
        keepdim += len(out) == len(program["inputs"][0]["shape"]) and \
            len(reducing[0]["type"]["shape"]) < len(out)
        multi += len(reducing[0]["ints"].get("dims", [])) > 1
    assert set(REDUCTIONS) <= set(used) and set(LOSSES) <= set(used)
    assert used["broadcast_back"] > 50
    assert keepdim > 100 and multi > 50, (keepdim, multi)
    assert stages[2] > 150, stages  # second reductions and the row losses


@pytest.fixture(scope="module")
def loss_rows():
    """Small losses over every element: every kind in every dtype it is
    drawn in, as rows with their kernels."""
    grammar = ReductionGrammar(random.Random(29))

    def form(program, used):
        kind = next((u for u in used if u in ELEMENTWISE_LOSSES), None)
        if kind and small(program["inputs"][0]["shape"]):
            return kind, program["inputs"][0]["dtype"]
        return None

    drawn = sample_forms(grammar.draw, 24, form)
    return engine_rows(drawn, "loss", "reduction")


@pytest.fixture(scope="module")
def linear_nd_rows():
    """Small linears of inputs of rank 3 and 4, with epilogues, as rows."""
    grammar = MatmulGrammar(random.Random(41), exclude=[f for f in FORMS if f != "linear_nd"])
    drawn = sample_forms(grammar.draw, 8, lambda program, used: small(
        program["inputs"][0]["shape"], program["inputs"][1]["shape"]) and (
        len(program["inputs"][0]["shape"]), len(program["inputs"])), per_form=4)
    return engine_rows(drawn, "linear_nd", "matmul")


def test_linears_of_higher_rank_inputs_are_the_compilers(linear_nd_rows):
    """nn.Linear of a [B, T, K] or [B, H, T, K] input: the compiler's 2-D
    linear between two reshapes."""
    assert {len(r["program"]["inputs"][0]["shape"]) for r in linear_nd_rows} == {3, 4}
    assert_the_compilers(linear_nd_rows)


def test_linear_of_higher_rank_input_kernels_compute_the_reference_program(linear_nd_rows,
                                                                         tmp_path):
    """The GEMM's rows are the input's leading dims flattened; each result
    element is stored where the reshape back puts it."""
    assert_each_agrees_on_host(linear_nd_rows, "matmul", tmp_path)


def test_losses_are_the_compilers(loss_rows):
    """F.mse_loss, F.huber_loss, F.kl_div ... as the compiler renders each
    (its beta or delta folded where it is 1, a batchmean's division)."""
    assert_the_compilers(loss_rows)


def test_loss_kernels_compute_the_reference_program(loss_rows, tmp_path):
    """A loss reduces its term over every element to one value."""
    assert_each_agrees_on_host(loss_rows, "reduction", tmp_path)


def test_the_normalization_grammar_covers_its_classes():
    grammar = NormalizationGrammar(random.Random(0))
    used, affine, dtypes = Counter(), Counter(), Counter()
    for _ in range(600):
        program, productions = grammar.draw()
        used.update(productions)
        if "batch_norm" in productions:  # elementwise: no op of its own
            dtypes[("batch_norm", "per channel", per_channel(program))] += 1
            continue
        if "instance_norm" in productions:  # its decomposition: no op of its own
            dtypes[("instance_norm", "input " + program["inputs"][0]["dtype"],
                    len(program["inputs"][0]["shape"]))] += 1
            continue
        (norm,) = [op for op in program["ops"] if op["fn"] in NORMS]
        affine[tuple(norm["ints"].get("affine", [0, 0]))] += 1
        dtypes[(norm["fn"], norm["type"]["dtype"])] += 1
        dtypes[(norm["fn"], "input " + program["inputs"][0]["dtype"])] += 1
    assert set(NORMS) <= set(used)
    assert {("batch_norm", "per channel", True), ("batch_norm", "per channel", False)} <= \
        set(dtypes)  # rank 3-5 (a channel dim), rank 2 ([N, C]: a row)
    assert {("group_norm", "input float16"), ("group_norm", "input bfloat16"),
            ("group_norm", "input float32")} <= set(dtypes)
    assert {("instance_norm", "input " + dtype, rank) for dtype in FLOATS + ("float32",)
            for rank in (3, 4, 5)} <= set(dtypes)
    assert set(affine) == {(0, 0), (1, 0), (1, 1)}
    assert {("softmax", "float16"), ("log_softmax", "bfloat16"), ("rms_norm", "float16")} <= \
        set(dtypes)


def test_the_matmul_grammar_covers_its_forms():
    grammar = MatmulGrammar(random.Random(0))
    seen = Counter()
    for _ in range(300):
        program, productions = grammar.draw()
        (form,) = [p for p in productions if p in FORMS]
        seen[(form, program["inputs"][0]["dtype"])] += 1
    assert {("matmul", "float16"), ("bmm", "bfloat16"), ("linear", "float32"),
            ("linear_nd", "float32")} <= set(seen)


def test_the_pooling_grammar_covers_its_forms():
    grammar = PoolingGrammar(random.Random(5))
    seen = Counter()
    for _ in range(300):
        program, used = grammar.draw()
        (pool,) = [op for op in program["ops"] if op["fn"] in ("max_pool", "sum_pool")]
        ints = pool["ints"]
        seen[(pool["fn"], len(program["inputs"][0]["shape"]) - 2)] += 1  # spatial dims
        seen["padded"] += any(op["fn"] == "pad" for op in program["ops"])
        seen["dilated"] += any(d > 1 for d in ints.get("dilation", []))
        seen["strided"] += any(s > 1 for s in ints["stride"])
        seen["ceil_mode"] += "ceil_mode" in used
        assert (pool["fn"] == "max_pool") == ("max_pool" in used)
    for form in [("max_pool", 1), ("max_pool", 2), ("max_pool", 3), ("sum_pool", 1),
                 ("sum_pool", 2), ("sum_pool", 3)]:
        assert seen[form] >= 10, (form, seen)
    assert seen["padded"] >= 30 and seen["dilated"] >= 10 and seen["strided"] >= 100, seen
    assert seen["ceil_mode"] >= 10, seen


@pytest.fixture(scope="module")
def pool_rows():
    """Small max pools in ceil mode (1-3 spatial dims) and 3-D average
    pools, with and without padding."""
    grammar = PoolingGrammar(random.Random(71))
    drawn = sample_forms(grammar.draw, 9, lambda program, used: math.prod(
        program["inputs"][0]["shape"]) <= 1 << 13 and ("ceil_mode" in used or (
            "avg_pool" in used and len(program["inputs"][0]["shape"]) == 5)) and (
                used[used.index("max_pool" if "max_pool" in used else "avg_pool")],
                len(program["inputs"][0]["shape"]),
                any(op["fn"] == "pad" for op in program["ops"])), per_form=2)
    return engine_rows(drawn, "pool", "pooling")


def test_ceil_mode_and_3d_average_pools_are_the_compilers(pool_rows):
    """Ceil mode as padding at the end of each dim, a 3-D average pool
    between permutes to channels last and back."""
    assert_the_compilers(pool_rows)


def test_ceil_mode_and_3d_average_pool_kernels_compute_the_reference_program(pool_rows,
                                                                             tmp_path):
    assert_each_agrees_on_host(pool_rows, "pooling", tmp_path)


def test_the_layout_grammar_covers_its_forms():
    grammar = LayoutGrammar(random.Random(6))
    seen = Counter()
    for _ in range(600):
        program, used = grammar.draw()
        gather = {"embedding", "index_select", "gather"} & set(used)
        if gather:  # int64 indices, then the source
            assert [op["fn"] for op in program["ops"]].count("index") == 1
            assert [i["dtype"] for i in program["inputs"][:1]] == ["int64"]
            seen[gather.pop()] += 1
            seen[program["inputs"][1]["dtype"]] += 1
            continue
        moves = [op for op in program["ops"] if op["fn"] in MOVES]
        if moves[0]["fn"] == "slice":  # a chain, each link slicing one dim
            types = program["inputs"] + [op["type"] for op in program["ops"]]
            assert {op["fn"] for op in moves} == {"slice"} and len(moves) <= 3
            for op in moves:
                ints, source = op["ints"], types[op["args"][0]]["shape"]
                assert sum(window != (0, size, 1) for window, size in zip(
                    zip(ints["offsets"], ints["sizes"], ints["strides"]), source)) == 1
            seen[f"slice of {len(moves)} dims"] += 1
            moves = moves[:1]
        (move,) = moves
        assert move["fn"] in used
        seen[move["fn"]] += 1
        seen[program["inputs"][0]["dtype"]] += 1
        ints = move.get("ints", {})
        if move["fn"] == "cat":
            rank = len(move["type"]["shape"])
            seen["cat last dim" if ints["dim"] == [rank - 1] else "cat other dim"] += 1
            seen[f"cat of {len(move['args'])}"] += 1
        seen["strided slice"] += move["fn"] == "slice" and max(ints["strides"]) > 1
        seen["filled pad"] += move["fn"] == "pad" and move.get("value", 0) != 0
    assert min(seen[k] for k in MOVES) >= 50, seen
    assert min(seen[d] for d in ("float32", "float16", "bfloat16")) >= 60, seen
    assert min(seen[k] for k in ("cat last dim", "cat other dim", "cat of 2", "cat of 3",
                                 "strided slice", "filled pad", "slice of 1 dims",
                                 "slice of 2 dims", "slice of 3 dims")) >= 10, seen


def test_the_convolution_grammar_covers_its_forms():
    grammar = ConvolutionGrammar(random.Random(7))
    seen, transposed = Counter(), Counter()
    for _ in range(400):
        program, used = grammar.draw()
        (conv,) = [op for op in program["ops"] if op["fn"] == "conv"]
        ints = conv["ints"]
        kind = next(u for u in used if u in CONVOLUTIONS)
        transposed[kind] += kind.startswith("conv_transpose")
        seen["transposed" if kind.startswith("conv_transpose") else kind] += 1
        seen["padded"] += any(op["fn"] == "pad" for op in program["ops"])
        seen["bias"] += any(op["fn"] == "expand" for op in program["ops"])
        seen["strided"] += max(ints["stride"]) > 1
        seen["dilated"] += max(ints["dilation"]) > 1
        seen["prologue"] += used[0] not in CONVOLUTIONS  # drawn before the conv
        seen["half"] += program["inputs"][0]["dtype"] != "float32"
        form = grouped_form(program, used)
        if form is not None:
            seen[form[1]] += 1
            assert "conv3d" not in used  # one group only
    assert min(seen.values()) >= 30 and len(seen) == 12, seen
    transposed = +transposed  # the kinds drawn transposed
    assert len(transposed) == 3 and min(transposed.values()) >= 5, transposed


def test_broadcast_patterns_broadcast():
    rng = random.Random(1)
    for shape in [(7,), (3, 5), (2, 3, 4), (2, 1, 3, 5, 4)]:
        for _ in range(50):
            pattern = broadcast_pattern(rng, shape)
            assert torch.broadcast_shapes(pattern, shape) == torch.Size(shape)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("engine")
    summary = generate(out, 1200, seed=5, jobs=2, tool=TOOL)
    return out, summary


def read(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_splits_are_honest(corpus):
    out, summary = corpus
    splits = {split: read(out / f"corpus-{split}.jsonl") for split in SPLITS}
    assert sum(len(r) for r in splits.values()) == summary["count"] == 1200
    assert all(splits.values()), {s: len(r) for s, r in splits.items()}
    fingerprints = [r["fingerprint"] for rows in splits.values() for r in rows]
    assert len(fingerprints) == len(set(fingerprints))
    for split in ("train", "val"):
        for row in splits[split]:
            assert not set(row["productions"]) & set(HELDOUT_PRIMITIVES), row["id"]
            classes = {class_of(p) for p in row["productions"]}
            assert not any(pair <= classes for pair in HELDOUT_PAIRS), row["id"]
    for row in splits["heldout-compositions"]:
        assert not set(row["productions"]) & set(HELDOUT_PRIMITIVES)
    # every held-out class occurs alone in training
    trained = {class_of(p) for row in splits["train"] for p in row["productions"]}
    assert set().union(*HELDOUT_PAIRS) <= trained


def test_rows_are_sft_rows_in_curriculum_order(corpus):
    out, _ = corpus
    rows = read(out / "corpus-train.jsonl")
    assert all(set(SFT_FIELDS) == set(r) for r in rows)
    difficulties = [r["difficulty"] for r in rows]
    assert difficulties == sorted(difficulties) and difficulties[0] < difficulties[-1]
    assert {r["level"] for r in rows} == {1, 2}


def test_any_number_of_jobs_writes_the_same_corpus(corpus, tmp_path):
    out, _ = corpus
    generate(tmp_path, 1200, seed=5, jobs=1, tool=TOOL)
    for split in SPLITS:
        name = f"corpus-{split}.jsonl"
        assert (tmp_path / name).read_text() == (out / name).read_text(), name


def test_each_convolution_path_is_a_cell_of_the_checks():
    """The stratified checks sample every code path of the convolution
    kernel (dense, depthwise, grouped; 3-D), not only the family."""
    grammar = ConvolutionGrammar(random.Random(5))
    paths = Counter()
    for _ in range(300):
        program, used = grammar.draw()
        path = emitter_of({"family": "convolution", "program": program, "middle": ""})
        form = grouped_form(program, used)
        spread = any(op["fn"] == "insert_slice" for op in program["ops"])
        assert path.split("-")[1] == ("transposed" if spread else
                                      "dense" if form is None else form[1]), (path, form)
        assert path.endswith("-3d") == ("conv3d" in used or "conv_transpose3d" in used)
        paths[path] += 1
    assert set(paths) == {"convolution-dense", "convolution-depthwise", "convolution-grouped",
                          "convolution-dense-3d", "convolution-transposed",
                          "convolution-transposed-3d"}, paths


@pytest.mark.parametrize("name", ["gelu", "silu", "mish"])
def test_wide_ranges_keep_an_activations_minimum(name):
    """A function's range over a wide interval keeps the minimum near 0 that
    a coarse grid steps over (else sqrt(gelu(x)) is drawn unguarded): against
    torch's own function on a dense grid."""
    x = torch.linspace(-3000.0, 3000.0, 2_000_001, dtype=torch.float64)
    truth = getattr(torch.nn.functional, name)(x).min().item()
    lo, _ = _range(UNARY[name].py, -3000.0, 3000.0)
    assert lo <= truth + 1e-3 and lo < -0.1


def test_a_shift_by_a_rows_extreme_is_never_fused_into_a_multiply_add():
    """`t - amax(t)` with `t` a product (softmax's and log-softmax's shift,
    logsumexp's, or a program's own) is 0 at the max element in PyTorch,
    which stores `t` rounded. nvcc fuses an unrounded product and the
    subtraction into one multiply-add unless told not to, which leaves the
    product's rounding error there: at inputs of 2^8 its exp was inf and
    the softmax NaN (found on an H100 in a chain's softmax stage). The
    kernels subtract with __fsub_rn, which nvcc never fuses."""
    x = {"shape": [4, 6], "dtype": "float32"}

    def op(fn, args, shape, **attrs):
        return {"fn": fn, "args": args, "type": {"shape": shape, "dtype": "float32"}, **attrs}

    product = op("mul", [0, 1], [4, 6])  # value 2
    programs = {
        "softmax": [product, op("softmax", [2], [4, 6], ints={"dim": [1]})],
        "log_softmax": [product, op("log_softmax", [2], [4, 6], ints={"dim": [1]})],
        "logsumexp": [product, op("logsumexp", [2], [4], ints={"dims": [1]})],
        "own shift": [product, op("amax", [2], [4], ints={"dims": [1]}),
                      op("reshape", [3], [4, 1]), op("sub", [2, 4], [4, 6]),
                      op("exp", [5], [4, 6])],
    }
    for name, ops in programs.items():
        program = {"inputs": [x, x], "ops": ops, "outputs": [len(ops) + 1]}
        source = emit_reduction.emit(program, declaration(program))
        shifts = re.findall(r"__fsub_rn\(([^,]*),", source)
        assert shifts, name
        assert all("t2" in s for s in shifts), (name, shifts)  # the product's value
    # A subtraction of anything else stays plain.
    plain = {"inputs": [x, x], "ops": [product, op("sub", [2, 0], [4, 6])], "outputs": [3]}
    assert "__fsub_rn" not in emit_elementwise.emit(plain, declaration(plain))
