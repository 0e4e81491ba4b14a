"""Chains of main ops (python/dice/engine/chain.py, emit_chain.py): what
the engine draws is what the compiler renders, and each stage's kernels,
run in turn through buffers, compute the printed program.

Oracles: the compiler (export, outline, scaffold) and PyTorch (the kernels
run on the host against the reference program)."""

import math
import random
from collections import Counter

import pytest

from dice.engine.chain import ChainGrammar
from dice.engine.emit_chain import emit, stages_of, sub_program
from dice.engine.emit_host import Unsupported, declaration
from test_engine import assert_each_agrees_on_host, assert_the_compilers, engine_rows


def small_chains(seed, count):
    """`count` chains whose every value is small enough to run on the host."""
    grammar = ChainGrammar(random.Random(seed), max_elements=1 << 11)
    drawn = []
    while len(drawn) < count:
        program, _ = grammar.draw()
        types = program["inputs"] + [op["type"] for op in program["ops"]]
        if all(math.prod(t["shape"]) <= 1 << 12 for t in types):
            drawn.append(program)
    return drawn


def small_chains_with(production, seed, count):
    """`count` small chains that drew `production` (an attention layer's
    values may reach 2^13 elements)."""
    grammar = ChainGrammar(random.Random(seed), max_elements=1 << 11)
    drawn = []
    while len(drawn) < count:
        program, used = grammar.draw()
        types = program["inputs"] + [op["type"] for op in program["ops"]]
        if production in used and all(math.prod(t["shape"]) <= 1 << 13 for t in types):
            drawn.append(program)
    return drawn


@pytest.fixture(scope="module")
def chain_rows():
    return engine_rows(small_chains(5, 12), "chain", "chain")


def test_chains_are_the_compilers(chain_rows):
    """Layer after layer, each main op rendered as its family renders it
    alone: the compiler renders the printed chain back the same."""
    assert_the_compilers(chain_rows)


def test_chain_kernels_compute_the_reference_program(chain_rows, tmp_path):
    """Each stage's kernels in turn, a main op that a later stage reads
    stored in a buffer of its own and read back through the ops between."""
    assert_each_agrees_on_host(chain_rows, "chain", tmp_path)


def test_the_chain_grammar_covers_its_steps():
    grammar = ChainGrammar(random.Random(2))
    seen = Counter()
    for _ in range(300):
        program, used = grammar.draw()
        stages = stages_of(program)
        assert len(stages) >= 2
        seen[f"{min(len(stages), 4)} stages"] += 1  # 4 and more
        seen.update(family for family, _ in stages)
        seen.update(u for u in used if u in ("batch_norm", "group_norm", "layer_norm",
                                             "rms_norm", "softmax", "mean", "linear_nd",
                                             "attention"))
    assert min(seen.values()) >= 10 and len(seen) == 15, seen


def test_a_stage_is_computed_from_inputs_and_earlier_buffers_only():
    """The sub-program of a stage: its main op and what that reads back to
    the program's inputs or an earlier stage's main ops, each of which
    becomes an input of its own shape."""
    for seed in range(5):
        program, _ = ChainGrammar(random.Random(seed)).draw()
        n_in = len(program["inputs"])
        stages = stages_of(program)
        earlier = [v for _, values in stages[:-1] for v in values]
        main = stages[-1][1][0]
        sub, sources = sub_program(program, [main], earlier)
        assert all(v < n_in or v in earlier for v in sources)
        assert any(v in earlier for v in sources)  # a chain: it reads the layer before
        for k, v in enumerate(sources):
            if v >= n_in:
                assert sub["inputs"][k]["shape"] == program["ops"][v - n_in]["type"]["shape"]
        fn = program["ops"][main - n_in]["fn"]
        assert [op["fn"] for op in sub["ops"]].count(fn) == 1


def test_one_stage_is_not_a_chain():
    """A program of one main op is its family's emitter's, not the chain's."""
    program, _ = ChainGrammar(random.Random(4)).draw()
    first = stages_of(program)[0][1][0]
    sub, _ = sub_program(program, [first], [])
    with pytest.raises(Unsupported):
        emit(sub, declaration(sub))


@pytest.fixture(scope="module")
def results_stage_rows():
    """Small chains whose results are not of the last main op's elements
    (a squeeze-and-excitation gate last: the image times a per-channel
    sigmoid), so a stage of their own computes them."""
    grammar = ChainGrammar(random.Random(21), max_elements=1 << 11)
    drawn = []
    while len(drawn) < 4:
        program, _ = grammar.draw()
        types = program["inputs"] + [op["type"] for op in program["ops"]]
        if all(math.prod(t["shape"]) <= 1 << 12 for t in types) and \
                "results_kernel" in emit(program, declaration(program)):
            drawn.append(program)
    return engine_rows(drawn, "results", "chain")


def test_results_stages_are_the_compilers(results_stage_rows):
    assert_the_compilers(results_stage_rows)


def test_results_stage_kernels_compute_the_reference_program(results_stage_rows, tmp_path):
    """The last main op stored too, the results computed from the buffers
    and the inputs an element a thread."""
    assert_each_agrees_on_host(results_stage_rows, "chain", tmp_path)


@pytest.fixture(scope="module")
def attention_chain_rows():
    """Small chains with a self-attention layer: projections, the scores'
    matmul, the softmax (masked at times), the values' matmul, the output
    projection, each a stage."""
    return engine_rows(small_chains_with("attention", 8, 4), "attention-chain", "chain")


def test_attention_layers_are_the_compilers(attention_chain_rows):
    assert_the_compilers(attention_chain_rows)


def test_attention_layer_kernels_compute_the_reference_program(attention_chain_rows, tmp_path):
    """The scores' matmul, the softmax and the values' matmul are one stage
    of the attention emitter (the scores never leave its block)."""
    assert all("attention_kernel" in r["middle"] for r in attention_chain_rows)
    assert_each_agrees_on_host(attention_chain_rows, "chain", tmp_path)


@pytest.fixture(scope="module")
def multi_head_rows():
    """Small chains with attention of several heads: the projections viewed
    as [B, H, L, d], the heads' values viewed back as [B, L, H * d]."""
    return engine_rows(small_chains_with("multi_head", 13, 3), "multi-head-chain", "chain")


def test_multi_head_layers_are_the_compilers(multi_head_rows):
    assert_the_compilers(multi_head_rows)


def test_multi_head_layer_kernels_compute_the_reference_program(multi_head_rows, tmp_path):
    assert_each_agrees_on_host(multi_head_rows, "chain", tmp_path)
