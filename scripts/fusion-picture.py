#!/usr/bin/env python3
"""Draws docs/fusion-policy.svg: one block (layer norm, linear, GELU) as
torch-mlir exports it, and the kernel requests dice-outline forms from it
at `fusion` granularity.

    .venv/bin/python scripts/fusion-picture.py [--build build] [-o docs/fusion-policy.svg]

Needs the built dice-opt and Graphviz's `dot`. The left graph has one node
per structured op of the exported function (edges: which op reads which);
the right one is the same graph with each request drawn as a box around its
ops, read from the `dice.position` that dice-outline gives every op.
"""

import argparse
import re
import subprocess
import tempfile
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

from dice.torch_mlir_import import export_linalg_on_tensors

ROOT = Path(__file__).resolve().parents[1]


class NormLinearGelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(24)
        self.fc = nn.Linear(24, 32)

    def forward(self, x):                       # [5, 24]
        return F.gelu(self.fc(self.norm(x)))    # [5, 32]


TOP_LEVEL = re.compile(r"^    (?:(%[\w:#]+) = )?([a-z_]+\.[a-z_0-9]+)(.*)$")
PAYLOAD = re.compile(r"= (?:arith|math)\.([a-z_]+)")
POSITION = re.compile(r"dice\.position = (\d+)")
SKIPPED = ("arith.constant", "tensor.empty", "linalg.fill", "func.return")


def parse_ops(mlir):
    """The body's top-level ops in order: dicts with position, result, op,
    operands (SSA names) and the payload's arith/math op names."""
    lines = mlir.splitlines()
    start = next(i for i, l in enumerate(lines) if l.lstrip().startswith("func.func"))
    ops = []
    for line in lines[start + 1:]:
        if line.startswith("  }"):
            break
        match = TOP_LEVEL.match(line)
        if match:
            result, name, rest = match.groups()
            ops.append({"position": len(ops), "result": result, "op": name,
                        "operands": re.findall(r"%[\w]+", rest.split(" outs(")[0]),
                        "reduction": "reduction" in rest, "payload": []})
        elif line.startswith("      ") and ops:
            ops[-1]["payload"] += PAYLOAD.findall(line)
    return ops


def label(op):
    name = op["op"].split(".", 1)[1]
    if name != "generic":
        return name
    words = [w for w in op["payload"] if w not in ("constant", "select", "cmpf")]
    text = " ".join(dict.fromkeys(words)) or "copy"
    return ("reduce " + text) if op["reduction"] else text


def requests_by_position(outlined):
    """position -> (request number, level) for the ops inside requests."""
    inside, number, level, depth = {}, 0, 0, None
    for line in outlined.splitlines():
        if "dice.kernel_request" in line:
            number += 1
            level = int(re.search(r"level\((\d)\)", line).group(1))
            depth = len(line) - len(line.lstrip())
            continue
        if depth is not None and line.strip() == "}" and len(line) - len(line.lstrip()) == depth:
            depth = None
            continue
        if depth is not None and line.startswith(" " * (depth + 2) + "%"):
            match = POSITION.search(line)
            if match and "dice.kernel_request" not in line:
                inside.setdefault(int(match.group(1)), (number, level))
    return inside


def dot_graph(ops, inside):
    nodes = [op for op in ops if op["op"] not in SKIPPED and not op["op"].startswith("dice.")]
    defined = {op["result"].split(":")[0]: op for op in nodes if op["result"]}
    out = ["digraph fusion {", '  rankdir=TB; compound=true; newrank=true;',
           '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11];',
           '  edge [color="#555555", arrowsize=0.6];']

    def node_id(side, op):
        return f"{side}{op['position']}"

    def color(op):
        if op["op"] in ("linalg.matmul", "linalg.batch_matmul") or "conv" in op["op"]:
            return "#f4b183"
        if op["reduction"]:
            return "#9dc3e6"
        if op["op"].startswith("tensor.") or op["op"] in ("linalg.transpose", "linalg.broadcast"):
            return "#d9d9d9"
        return "#c5e0b4"

    for side, title in (("b", "exported by torch-mlir: one node per op"),
                        ("a", "dice-outline granularity=fusion: one box per request")):
        out.append(f'  subgraph cluster_{side} {{ label="{title}"; fontname="Helvetica"; '
                   'fontsize=13; style=dashed; color="#888888";')
        out.append(f'    {side}x [label="x [5, 24]", shape=ellipse, fillcolor=white];')
        groups = {}
        for op in nodes:
            key = inside.get(op["position"]) if side == "a" else None
            groups.setdefault(key, []).append(op)
        for key, members in groups.items():
            indent = "    "
            if key is not None:
                number, level = key
                out.append(f'    subgraph cluster_{side}_r{number} {{ label="request {number} '
                           f'(level {level})"; style="rounded"; color="#c00000"; penwidth=2;')
                indent = "      "
            for op in members:
                outside = side == "a" and key is None
                fill = "white" if outside else color(op)
                extra = ', style="rounded,dashed,filled"' if outside else ""
                text = label(op) + ("\\n(of a weight: outside)" if outside else "")
                out.append(f'{indent}{node_id(side, op)} [label="{text}", '
                           f'fillcolor="{fill}"{extra}];')
            if key is not None:
                out.append("    }")
        for op in nodes:
            for operand in op["operands"]:
                if operand.startswith("%arg"):
                    out.append(f"    {side}x -> {node_id(side, op)};")
                elif operand in defined:
                    out.append(f"    {node_id(side, defined[operand])} -> {node_id(side, op)};")
        out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", type=Path, default=ROOT / "build")
    parser.add_argument("-o", "--output", type=Path, default=ROOT / "docs" / "fusion-policy.svg")
    args = parser.parse_args()
    torch.manual_seed(0)
    mlir = export_linalg_on_tensors(NormLinearGelu().eval(), (torch.randn(5, 24),),
                                    func_name="norm_linear_gelu")
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp, "block.mlir")
        source.write_text(mlir)
        outlined = subprocess.run([str(args.build / "bin" / "dice-opt"), str(source),
                                   "--dice-outline=granularity=fusion"],
                                  check=True, capture_output=True, text=True).stdout
    graph = dot_graph(parse_ops(mlir), requests_by_position(outlined))
    svg = subprocess.run(["dot", "-Tsvg"], input=graph, check=True,
                         capture_output=True, text=True).stdout
    args.output.write_text(svg)
    print(f"{args.output}: {outlined.count('dice.kernel_request')} requests")


if __name__ == "__main__":
    main()
