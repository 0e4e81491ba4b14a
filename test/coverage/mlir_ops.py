"""Which ops of an outlined function compute outside kernel requests.

Reads the function body of `dice-opt --dice-outline` output as printed
(custom form): ops at the body's indentation are the function's own, ops
one level deeper inside a `dice.kernel_request` are the request's. An op
outside is counted as

- data movement: constants, `tensor.empty`, reshapes, slices, pads,
  concatenation, `linalg.fill`, and scalar index arithmetic of dynamic
  shapes (what a runtime does without a kernel);
- weight preparation: an op that reads only constants, a weight among them
  (the transpose of a `nn.Linear` weight), which dice-outline keeps outside
  on purpose; an op computing from splats and `tensor.empty` alone (an
  iota) is compute, as dice-outline also means to outline it;
- scalar: an op without tensors (shape checks and index arithmetic of
  dynamic dims: `cf.assert`, `affine.apply`, `arith.cmpi` on indices);
- compute: every other op, of linalg, arith, math or another dialect.
"""

import re
from collections import Counter

DATA_MOVEMENT = {
    "arith.constant", "tensor.empty", "tensor.expand_shape", "tensor.collapse_shape",
    "tensor.cast", "tensor.dim", "tensor.extract_slice", "tensor.insert_slice", "tensor.pad",
    "tensor.concat", "tensor.reshape", "tensor.extract", "tensor.from_elements",
    "tensor.splat", "linalg.fill",
}
TERMINATORS = {"return", "func.return", "dice.yield"}
# Custom form, or generic (`"tm_tensor.scan"(...)`, how dice-opt prints ops of
# dialects it does not know).
_OP = re.compile(r'^(?P<results>%[^=]*?) = "?(?P<name>[\w.]+)|^"?(?P<bare>[\w.]+)')
_VALUE = re.compile(r"%[\w$.-]+")
# A non-splat tensor constant, a weight: dense_resource, a dense<[...]> list or
# hex (dense<"0x...">); a splat prints as dense<value>.
_WEIGHT = re.compile(r'arith\.constant .*(dense_resource<|dense<\[|dense<")')


def _parse(line):
    """(op name, results, operands) of an op's first line."""
    m = _OP.match(line)
    if not m:
        return None, [], []
    if m.group("bare"):
        return m.group("bare"), [], _VALUE.findall(line)
    results = [v.split(":")[0] for v in _VALUE.findall(m.group("results"))]
    operands = [v.split("#")[0] for v in _VALUE.findall(line[m.end():])]
    return m.group("name"), results, operands


def count_ops(text):
    """Counts of one outlined function: requests, compute ops inside them,
    compute / data-movement / weight-preparation ops outside, and the
    outside compute ops by name."""
    counts = {"requests": 0, "compute_inside": 0, "compute_outside": 0,
              "data_outside": 0, "weight_outside": 0, "scalar_outside": 0, "outside_ops": Counter()}
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if l.lstrip().startswith("func.func")), None)
    if start is None:
        return counts
    body = len(lines[start]) - len(lines[start].lstrip()) + 2
    constant_like, weights = set(), set()
    in_request = False
    for line in lines[start + 1:]:
        indent = len(line) - len(line.lstrip())
        stripped = line.strip()
        if indent < body and stripped.startswith("}"):
            break  # the end of the function
        if not stripped or stripped[0] in "}^":
            continue
        name, results, operands = _parse(stripped)
        if name is None or name in TERMINATORS:
            continue
        if indent == body:
            in_request = name == "dice.kernel_request"
            if in_request:
                counts["requests"] += 1
            elif name in DATA_MOVEMENT:
                counts["data_outside"] += 1
                if all(o in constant_like for o in operands):
                    constant_like.update(results)
                    if _WEIGHT.search(stripped) or any(o in weights for o in operands):
                        weights.update(results)
            elif "tensor<" not in stripped and f'"{name}"' not in stripped:
                # (A generic op with a region prints its types on its last line.)
                counts["scalar_outside"] += 1
            elif all(o in constant_like for o in operands) and any(o in weights for o in operands):
                counts["weight_outside"] += 1
                constant_like.update(results)
                weights.update(results)
            else:
                counts["compute_outside"] += 1
                counts["outside_ops"][name] += 1
        elif indent == body + 2 and in_request and name not in DATA_MOVEMENT:
            counts["compute_inside"] += 1
    counts["outside_ops"] = dict(counts["outside_ops"])
    return counts
