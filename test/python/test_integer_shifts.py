"""Every arith shift renders exactly: shli, shrsi (arithmetic) and shrui
(logical, of the signless value read as unsigned), in 8, 32 and 64 bits.

Each shift is planned from a hand-written generic and run through both
backends; the expected values follow the ops' definitions in MLIR's arith
dialect, computed with Python integers (shift amounts below the bit width:
larger ones are poison there).
"""

import json

import pytest
import torch

from build_tree import tool
from plan_checks import run_aten

from dice.plan import run_plan

MLIR = """
#id = affine_map<(d0) -> (d0)>
func.func @shift(%a: tensor<16x{t}>, %b: tensor<16x{t}>) -> tensor<16x{t}> {{
  %e = tensor.empty() : tensor<16x{t}>
  %r = linalg.generic {{indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}}
      ins(%a, %b : tensor<16x{t}>, tensor<16x{t}>) outs(%e : tensor<16x{t}>) {{
  ^bb0(%x: {t}, %y: {t}, %o: {t}):
    %s = arith.{op} %x, %y : {t}
    linalg.yield %s : {t}
  }} -> tensor<16x{t}>
  return %r : tensor<16x{t}>
}}
"""

DTYPES = {"i8": (torch.int8, 8), "i32": (torch.int32, 32), "i64": (torch.int64, 64)}


def signed(value, bits):
    value %= 1 << bits
    return value - (1 << bits) if value >= 1 << (bits - 1) else value


SHIFTS = {
    "shli": lambda a, b, bits: signed(a << b, bits),
    "shrsi": lambda a, b, bits: a >> b,  # Python's >> of a negative int floors
    "shrui": lambda a, b, bits: signed((a % (1 << bits)) >> b, bits),
}


@pytest.mark.parametrize("op", sorted(SHIFTS))
@pytest.mark.parametrize("t", sorted(DTYPES))
def test_shift_renders_exactly(op, t, tmp_path):
    dtype, bits = DTYPES[t]
    g = torch.Generator().manual_seed(bits)
    info = torch.iinfo(dtype)
    a = torch.randint(info.min, info.max, (16,), generator=g, dtype=dtype)
    a[:4] = torch.tensor([info.min, info.max, -1, 0], dtype=dtype)
    b = torch.randint(0, bits, (16,), generator=g, dtype=dtype)
    b[:4] = torch.tensor([bits - 1, 1, bits - 1, 3], dtype=dtype)
    source = tmp_path / "shift.mlir"
    source.write_text(MLIR.format(t=t, op=op))
    plan_text = tool("dice-plan", stdin=tool(
        "dice-opt", source, "--dice-outline=granularity=op", "--dice-scaffold"))
    plan = json.loads(plan_text)
    assert any("request" in s for s in plan["steps"]), "the shift is not a request"
    (tmp_path / "plan.json").write_text(plan_text)
    want = torch.tensor([SHIFTS[op](x, y, bits) for x, y in zip(a.tolist(), b.tolist())],
                        dtype=dtype)
    for backend, outputs in (("python", run_plan(plan, [a, b])),
                             ("aten", run_aten(tmp_path / "plan.json", [a, b], tmp_path))):
        (got,) = outputs
        assert got.dtype == dtype, backend
        assert torch.equal(got, want), f"{op} {t} ({backend}): {got.tolist()} != {want.tolist()}"
