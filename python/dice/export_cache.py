"""A record of torch-mlir exports, for machines without torch-mlir.

torch-mlir turns each Dynamo graph into linalg-on-tensors MLIR. A GPU node
often lacks it (its wheels are built for one Python and are large), while
everything after the export runs there (docs/gpu-node.md). With an export
cache, a machine that has torch-mlir records each export it makes under a
key of the graph; the node, compiling the same program, finds the export
under the same key instead of importing torch-mlir.

The key is the graph's structure, not its text or its device: each node's
kind, target and arguments (devices left out, since the same program is
recorded on the CPU and compiled on the GPU), each input's shape, strides
and dtype, the values of the tensors the graph holds as attributes, and
torch's version. Where torch-mlir imports, the graph is always exported
afresh and the record rewritten: the cache never stands in for a
torch-mlir that is there.
"""

import hashlib
import json
import os
import re
from pathlib import Path

import torch

FORMAT = 1
# An object's default repr holds its address, which differs per process.
ADDRESS = re.compile(r" at 0x[0-9a-f]+")


class ExportCacheMiss(Exception):
    """The cache holds no export of the graph."""


def torch_mlir_available():
    try:
        import torch_mlir.fx  # noqa: F401
    except ImportError:
        return False
    return True


def _target_name(target):
    if isinstance(target, str):
        return target
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None)
    if name is None:
        return ADDRESS.sub("", str(target))
    return f"{module}.{name}"


def _argument(value):
    """A stable description of a node argument."""
    if isinstance(value, torch.fx.Node):
        return f"%{value.name}"
    if isinstance(value, torch.device):
        return "<device>"
    if isinstance(value, (torch.dtype, torch.layout, torch.memory_format)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, [_argument(v) for v in value]]
    if isinstance(value, dict):
        return ["dict", [[str(k), _argument(v)] for k, v in sorted(value.items(), key=str)]]
    if isinstance(value, slice):
        return ["slice", _argument(value.start), _argument(value.stop), _argument(value.step)]
    if isinstance(value, float):
        return ["float", value.hex()]
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if value is Ellipsis:
        return "..."
    return [type(value).__name__, ADDRESS.sub("", repr(value))]


def _tensor_digest(tensor):
    data = tensor.detach().to("cpu").contiguous()
    digest = hashlib.sha256()
    digest.update(f"{list(data.shape)} {data.dtype}".encode())
    digest.update(data.view(torch.uint8).numpy().tobytes() if data.numel() else b"")
    return digest.hexdigest()


def graph_description(gm, example_inputs):
    """The JSON-able structure the key is a hash of."""
    nodes = []
    for node in gm.graph.nodes:
        entry = [node.op, node.name, _target_name(node.target),
                 _argument(node.args), _argument(node.kwargs)]
        if node.op == "get_attr":
            value = gm
            for part in str(node.target).split("."):
                value = getattr(value, part)
            if isinstance(value, torch.Tensor):
                entry.append(_tensor_digest(value))
        nodes.append(entry)
    inputs = [[list(x.shape), list(x.stride()), str(x.dtype)] if isinstance(x, torch.Tensor)
              else [type(x).__name__, _argument(x)] for x in example_inputs]
    version = torch.__version__.split("+")[0]
    return {"format": FORMAT, "torch": version, "nodes": nodes, "inputs": inputs}


def key_of(description):
    text = json.dumps(description, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def graph_key(gm, example_inputs):
    return key_of(graph_description(gm, example_inputs))


class ExportCache:
    """The exports under `folder`: `<key>.mlir` and, beside it,
    `<key>.json` (what the key was made of, for a person comparing a miss)."""

    def __init__(self, folder):
        self.folder = Path(folder)

    def record(self, gm, example_inputs, mlir):
        description = graph_description(gm, example_inputs)
        key = key_of(description)
        self.folder.mkdir(parents=True, exist_ok=True)
        description["graph"] = gm.code
        for suffix, text in ((".json", json.dumps(description, indent=1) + "\n"),
                             (".mlir", mlir)):
            # Written whole, then renamed: a reader never sees half a file.
            final = self.folder / f"{key}{suffix}"
            partial = final.with_name(f".{final.name}.{os.getpid()}")
            partial.write_text(text)
            partial.replace(final)
        return key

    def export(self, gm, example_inputs, export):
        """`export()` (torch-mlir's export of the graph), recorded here,
        where torch-mlir is installed; where it is not, the recorded one
        (ExportCacheMiss when there is none)."""
        if not torch_mlir_available():
            return self.find(gm, example_inputs)
        mlir = export()
        self.record(gm, example_inputs, mlir)
        return mlir

    def find(self, gm, example_inputs):
        key = graph_key(gm, example_inputs)
        path = self.folder / f"{key}.mlir"
        try:
            return path.read_text()
        except FileNotFoundError:
            recorded = len(list(self.folder.glob("*.mlir"))) if self.folder.is_dir() else 0
            raise ExportCacheMiss(
                f"torch-mlir is not installed here, and the export cache {self.folder} "
                f"holds no export of this graph (key {key}; {recorded} recorded): "
                "compile the same program where torch-mlir is, with the same cache, "
                "and bring the cache along") from None
