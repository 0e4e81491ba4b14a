"""Estimated H200 device time of every task's forward, from its bytes moved and its FLOPs.

The forward is traced eagerly, on fake tensors (no memory is allocated and nothing is
computed), under torch's FlopCounterMode for FLOPs (matrix products, convolutions, attention)
and a dispatch mode that sums, over every ATen op that is not a view, the bytes of the tensors
it reads and writes: eager PyTorch's memory traffic, inputs, parameters, intermediates and
outputs included. A broadcast (stride 0) dimension is counted once.

FlopCounterMode has no formula for two ops the tasks reach on CPU, so this adds them: the CPU
flash-attention kernel (counted as the GPU's, halved when causal: the GPU kernel skips the
masked blocks) and the fused LSTM layer (its gate GEMMs, over every step). nn.MultiheadAttention's
fused inference path is switched off so that its matrix products are counted one by one.

The estimate is max(bytes / 4.3 TB/s, FLOPs / 50 TFLOP/s): an H200's HBM bandwidth and its
float32 throughput without TF32. Run it from the repository root:

    python tasks/estimate.py [TASK.py ...]
"""

import importlib.util
import sys
from pathlib import Path

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import FlopCounterMode, sdpa_flop_count

aten = torch.ops.aten

TASKS_ROOT = Path(__file__).resolve().parent
BANDWIDTH = 4.3e12      # bytes per second
FLOP_RATE = 50e12       # float32 FLOPs per second
# Ops that move no data although their schema does not mark them as views.
FREE_OPS = {"detach", "alias", "lift_fresh", "_to_copy_meta", "empty", "empty_like",
            "empty_strided", "new_empty", "new_empty_strided", "_local_scalar_dense"}


def _cpu_flash_attention_flops(query, key, value, dropout_p=0.0, is_causal=False, *args,
                               out_shape=None, **kwargs):
    flops = sdpa_flop_count(query, key, value)
    return flops // 2 if is_causal else flops


def _rnn_layer_flops(input, w_ih, w_hh, *args, out_shape=None, **kwargs):
    steps = input[0] * input[1]                   # batch * sequence, whichever order
    return 2 * steps * (w_ih[0] * w_ih[1] + w_hh[0] * w_hh[1])


CUSTOM_FLOPS = {aten._scaled_dot_product_flash_attention_for_cpu: _cpu_flash_attention_flops,
                aten.mkldnn_rnn_layer: _rnn_layer_flops}


def tensor_bytes(t):
    """Bytes of the distinct elements a tensor covers (broadcast dimensions once)."""
    n = 1
    for size, stride in zip(t.shape, t.stride()):
        if stride != 0:
            n *= size
    return n * t.element_size()


class ByteCounter(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.bytes = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        if func.is_view or name in FREE_OPS:
            return out
        leaves = tree_flatten((args, kwargs or {}))[0] + tree_flatten(out)[0]
        self.bytes += sum(tensor_bytes(x) for x in leaves if isinstance(x, torch.Tensor))
        return out


def load(path):
    spec = importlib.util.spec_from_file_location(f"task_{path.parent.name}_{path.stem}", path)
    namespace = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(namespace)
    return namespace


def estimate(path):
    """(bytes, FLOPs, seconds) of one eager forward of the task at `path`."""
    namespace = load(path)
    torch.manual_seed(0)
    with FakeTensorMode(allow_non_fake_inputs=True):
        model = namespace.Model(*namespace.get_init_inputs()).eval()
        inputs = namespace.get_inputs()
        flops = FlopCounterMode(display=False, custom_mapping=CUSTOM_FLOPS)
        counter = ByteCounter()
        with torch.no_grad(), flops, counter:
            model(*inputs)
    total_flops = flops.get_total_flops()
    seconds = max(counter.bytes / BANDWIDTH, total_flops / FLOP_RATE)
    return counter.bytes, total_flops, seconds


def main(argv):
    torch.backends.mha.set_fastpath_enabled(False)
    paths = [Path(p) for p in argv] or sorted(TASKS_ROOT.glob("level*/*.py"))
    print(f"{'task':45s} {'MB moved':>10s} {'GFLOP':>9s} {'H200 ms':>8s}  bound")
    for path in paths:
        moved, flops, seconds = estimate(path.resolve())
        bound = "memory" if moved / BANDWIDTH >= flops / FLOP_RATE else "compute"
        name = f"{path.resolve().parent.name}/{path.name}"
        print(f"{name:45s} {moved / 1e6:10.1f} {flops / 1e9:9.2f} {seconds * 1e3:8.3f}  {bound}")


if __name__ == "__main__":
    main(sys.argv[1:])
