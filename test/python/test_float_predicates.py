"""Every arith.cmpf predicate renders exactly, NaNs included.

Each predicate is planned from a hand-written generic and run through both
backends on inputs with NaNs, infinities and equal pairs; the expected
values follow the predicates' definitions in MLIR's arith dialect (ordered:
false when either operand is NaN; unordered: true), written with torch's own
comparisons and isnan.
"""

import json

import pytest
import torch

from build_tree import tool
from plan_checks import run_aten

from dice.plan import run_plan


def ordered(a, b):
    return ~(a.isnan() | b.isnan())


PREDICATES = {
    "oeq": lambda a, b: ordered(a, b) & (a == b),
    "ogt": lambda a, b: ordered(a, b) & (a > b),
    "oge": lambda a, b: ordered(a, b) & (a >= b),
    "olt": lambda a, b: ordered(a, b) & (a < b),
    "ole": lambda a, b: ordered(a, b) & (a <= b),
    "one": lambda a, b: ordered(a, b) & (a != b),
    "ord": ordered,
    "ueq": lambda a, b: ~ordered(a, b) | (a == b),
    "ugt": lambda a, b: ~ordered(a, b) | (a > b),
    "uge": lambda a, b: ~ordered(a, b) | (a >= b),
    "ult": lambda a, b: ~ordered(a, b) | (a < b),
    "ule": lambda a, b: ~ordered(a, b) | (a <= b),
    "une": lambda a, b: ~ordered(a, b) | (a != b),
    "uno": lambda a, b: ~ordered(a, b),
}

MLIR = """
#id = affine_map<(d0) -> (d0)>
func.func @compare(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xi1> {{
  %e = tensor.empty() : tensor<8xi1>
  %r = linalg.generic {{indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}}
      ins(%a, %b : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xi1>) {{
  ^bb0(%x: f32, %y: f32, %o: i1):
    %c = arith.cmpf {predicate}, %x, %y : f32
    linalg.yield %c : i1
  }} -> tensor<8xi1>
  return %r : tensor<8xi1>
}}
"""

NAN, INF = float("nan"), float("inf")
A = torch.tensor([NAN, 1.0, NAN, 2.0, -INF, 3.0, 0.0, INF])
B = torch.tensor([NAN, NAN, 1.0, 2.0, -INF, -1.0, -0.0, 5.0])


@pytest.mark.parametrize("predicate", sorted(PREDICATES))
def test_comparison_predicate_renders_exactly(predicate, tmp_path):
    source = tmp_path / "compare.mlir"
    source.write_text(MLIR.format(predicate=predicate))
    plan_text = tool("dice-plan", stdin=tool(
        "dice-opt", source, "--dice-outline=granularity=op", "--dice-scaffold"))
    plan = json.loads(plan_text)
    assert any("request" in s for s in plan["steps"]), "the comparison is not a request"
    (tmp_path / "plan.json").write_text(plan_text)
    want = PREDICATES[predicate](A, B)
    for backend, outputs in (("python", run_plan(plan, [A, B])),
                             ("aten", run_aten(tmp_path / "plan.json", [A, B], tmp_path))):
        (got,) = outputs
        assert got.dtype == torch.bool, backend
        assert torch.equal(got, want), f"{predicate} ({backend}): {got.tolist()} != {want.tolist()}"
