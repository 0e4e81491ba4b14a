"""What every CUDA template shares: storage types per dtype, the input
checks and the pieces of `dice_forward` around the launches.

Solutions are specialised to their task's dtype (a request has one
signature and one dtype), computing in float whatever the storage, as
PyTorch's own kernels do for half and bfloat16."""

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Storage:
    torch: str        # torch.float32
    c_type: str       # what the kernels read and write
    at_type: str      # what data_ptr<> takes
    kind: str         # the at:: scalar type the host checks
    load: str         # float from one stored value, "{}" the value
    store: str        # one stored value from a float, "{}" the float
    header: str


DTYPES = {
    "float32": Storage("torch.float32", "float", "float", "at::kFloat", "{}", "{}", ""),
    "float16": Storage("torch.float16", "__half", "at::Half", "at::kHalf",
                       "__half2float({})", "__float2half({})", "#include <cuda_fp16.h>\n"),
    "bfloat16": Storage("torch.bfloat16", "__nv_bfloat16", "at::BFloat16", "at::kBFloat16",
                        "__bfloat162float({})", "__float2bfloat16({})",
                        "#include <cuda_bf16.h>\n"),
    # Indices (an embedding's): read as they are, never computed in float.
    "int64": Storage("torch.int64", "int64_t", "int64_t", "at::kLong", "{}", "{}", ""),
    # Masks (a masked_fill's, an attention's): read as they are.
    "bool": Storage("torch.bool", "bool", "bool", "at::kBool", "{}", "{}", ""),
}

HEADER = ("#include <torch/extension.h>\n#include <c10/cuda/CUDAStream.h>\n"
          "#include <algorithm>\n#include <cstdint>\n")


def header(dtype):
    return HEADER + DTYPES[dtype].header


def parameters(signature):
    """The parameter names of a `dice_forward` declaration, in order."""
    inside = signature[signature.index("(") + 1:signature.rindex(")")]
    return [re.split(r"\s+", p.strip())[-1] for p in inside.split(",") if p.strip()]


def definition_head(signature):
    """The declaration as the head of its definition."""
    return signature.strip().rstrip(";").strip()


def input_checks(names, dtypes):
    """TORCH_CHECKs that each input is a contiguous CUDA tensor of its dtype."""
    lines = []
    for name, dtype in zip(names, dtypes):
        lines.append(f'  TORCH_CHECK({name}.is_cuda(), "{name} must be a CUDA tensor");')
        lines.append(f'  TORCH_CHECK({name}.is_contiguous(), "{name} must be contiguous");')
        lines.append(f'  TORCH_CHECK({name}.scalar_type() == {DTYPES[dtype].kind}, '
                     f'"{name} must be {dtype}");')
    return "\n".join(lines)


def pointer(name, dtype, const=True):
    """`name`'s data as the kernels' storage type."""
    s = DTYPES[dtype]
    if s.c_type == s.at_type:
        return f"{name}.data_ptr<{s.at_type}>()"
    qualifier = "const " if const else ""
    return f"reinterpret_cast<{qualifier}{s.c_type} *>({name}.data_ptr<{s.at_type}>())"


def blocks_for(count, cap=4096):
    """Host expression: blocks of a grid-stride launch over `count` items,
    `threads` a block; capped, the grid-stride loop covers the rest."""
    return f"(int)std::min<int64_t>(({count} + threads - 1) / threads, {cap})"


def launch_args(args, indent="      ", width=90):
    """Kernel arguments: inline when short, else on lines of their own,
    filled up to `width`."""
    joined = ", ".join(args)
    if len(joined) <= 40:
        return joined
    lines, line = [], indent
    for arg in args:
        piece = arg + ","
        if line.strip() and len(line) + 1 + len(piece) > width:
            lines.append(line)
            line = indent
        line += ("" if not line.strip() else " ") + piece
    lines.append(line)
    return "\n" + "\n".join(lines)[:-1]


def float_literal(value):
    """A C float literal for a Python number."""
    text = repr(float(value))
    if "e" not in text and "." not in text:
        text += ".0"
    return text + "f"


def check_hole(source):
    """The CUDA text must survive a Python triple-quoted string unchanged."""
    if "\\" in source or '"""' in source:
        raise ValueError("CUDA source holds a backslash or triple quote")
    return source


def hole(cuda_source):
    """What the model writes between prefix and suffix: the CUDA source as
    the scaffold's `source` string."""
    return f'source = """\n{check_hole(cuda_source)}"""'
