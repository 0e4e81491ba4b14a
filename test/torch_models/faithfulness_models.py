"""The project's own PyTorch programs for the front end's faithfulness test.

Thirty-odd small models across the KernelBench levels: single ops (level 1),
fusions of a compute-heavy op with its epilogue (level 2) and blocks of a
network (level 3). Each entry builds (module, example inputs) with seeded
weights; the test draws fresh inputs of the same shapes.
"""

import torch
from torch import nn
from torch.nn import functional as F


class Lambda(nn.Module):
    """A module computing `fn(*inputs)`, for single-op programs."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *inputs):
        return self.fn(*inputs)


def r(*shape):
    return torch.randn(*shape)


# ----------------------------------------------------------------- level 1

SINGLE_OPS = {
    "matmul": lambda: (Lambda(torch.matmul), (r(8, 16), r(16, 12))),
    "bmm": lambda: (Lambda(torch.bmm), (r(3, 8, 16), r(3, 16, 4))),
    "matvec": lambda: (Lambda(torch.mv), (r(8, 16), r(16))),
    "matmul_transposed": lambda: (Lambda(lambda a, b: a @ b.t()), (r(8, 16), r(12, 16))),
    "sum_dim": lambda: (Lambda(lambda x: x.sum(dim=1)), (r(4, 32, 8),)),
    "mean_dim": lambda: (Lambda(lambda x: x.mean(dim=-1, keepdim=True)), (r(6, 20),)),
    "amax_dim": lambda: (Lambda(lambda x: torch.amax(x, dim=0)), (r(10, 7),)),
    "any_all": lambda: (Lambda(lambda x: (x > 0.5).any(dim=1).float() +
                               (x < 1.5).all(dim=1).float()), (r(10, 7),)),
    "softmax": lambda: (nn.Softmax(dim=-1), (r(4, 33),)),
    "log_softmax": lambda: (nn.LogSoftmax(dim=1), (r(5, 17),)),
    "layernorm": lambda: (nn.LayerNorm(24), (r(3, 5, 24),)),
    "max_pool2d": lambda: (nn.MaxPool2d(2), (r(2, 3, 8, 8),)),
    "avg_pool2d": lambda: (nn.AvgPool2d(2), (r(2, 3, 8, 8),)),
    "conv2d": lambda: (nn.Conv2d(3, 6, 3, padding=1), (r(2, 3, 8, 8),)),
    "gelu": lambda: (nn.GELU(), (r(4, 64),)),
    "sigmoid": lambda: (nn.Sigmoid(), (r(4, 64),)),
    "tanh": lambda: (nn.Tanh(), (r(4, 64),)),
    "leaky_relu": lambda: (nn.LeakyReLU(0.1), (r(4, 64),)),
    "hardtanh": lambda: (nn.Hardtanh(-0.5, 0.5), (r(4, 64),)),
    "broadcast_mul_add": lambda: (Lambda(lambda a, b, c: a * b + c), (r(4, 8), r(8), r(4, 1))),
    "scale_exp": lambda: (Lambda(lambda x: torch.exp(x / 3.0)), (r(16, 16),)),
    # A loss whose target is a constant: its `target == 1` compares a
    # constant tensor with an integer, a mask torch-mlir folds.
    "cosine_loss_constant_target": lambda: (
        Lambda(lambda a, b: F.cosine_embedding_loss(a, b, torch.ones(a.shape[0]))),
        (r(6, 12), r(6, 12))),
    "constant_masks": lambda: (ConstantMasks(), (r(5, 7),)),
}


class ConstantMasks(nn.Module):
    """Every comparison of a constant tensor with an integer, true and
    false, each choosing between two branches of the input; and one of a
    constant buffer."""

    def __init__(self):
        super().__init__()
        self.register_buffer("level", torch.full((7,), 2.0))

    def forward(self, x):
        c = torch.full_like(x, 2.0)
        for compare, n in ((torch.eq, 2), (torch.ne, 2), (torch.lt, 3), (torch.le, 1),
                           (torch.gt, -1), (torch.ge, 3)):
            x = torch.where(compare(c, n), x * 1.5, x - 0.25)
        return torch.where(self.level >= 2, x, -x)

# ----------------------------------------------------------------- level 2


class GemmBiasRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 24)

    def forward(self, x):
        return torch.relu(self.fc(x))


class GemmGelu(nn.Module):
    """Exact (erf) GELU: torch-mlir 20261001 lowers the tanh approximation
    with 0.797724 for sqrt(2/pi) = 0.797885, so that export alone differs
    from PyTorch by about 3e-5 relative."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 40)

    def forward(self, x):
        return F.gelu(self.fc(x))


class ConvReluAdd(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x)) + x


class MatmulSoftmax(nn.Module):
    def forward(self, a, b):
        return torch.softmax(a @ b, dim=-1)


class GemmSwish(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(20, 20)

    def forward(self, x):
        y = self.fc(x)
        return y * torch.sigmoid(y)


class ConvBiasMaxPool(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x):
        return F.max_pool2d(self.conv(x), 2)


class LinearLayerNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 32)
        self.norm = nn.LayerNorm(32)

    def forward(self, x):
        return self.norm(self.fc(x))


class ScaledBmmSoftmax(nn.Module):
    def forward(self, q, k):
        return torch.softmax(torch.bmm(q, k.transpose(1, 2)) * 0.25, dim=-1)


class MatmulTanhScale(nn.Module):
    def forward(self, a, b):
        return torch.tanh(a @ b) * 2.0 - 1.0


class ConvBatchNormRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(6)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


FUSIONS = {
    "gemm_bias_relu": lambda: (GemmBiasRelu(), (r(8, 32),)),
    "gemm_gelu": lambda: (GemmGelu(), (r(8, 16),)),
    "conv_relu_add": lambda: (ConvReluAdd(), (r(2, 4, 6, 6),)),
    "matmul_softmax": lambda: (MatmulSoftmax(), (r(6, 10), r(10, 12))),
    "gemm_swish": lambda: (GemmSwish(), (r(5, 20),)),
    "conv_bias_maxpool": lambda: (ConvBiasMaxPool(), (r(2, 3, 10, 10),)),
    "linear_layernorm": lambda: (LinearLayerNorm(), (r(4, 16),)),
    "scaled_bmm_softmax": lambda: (ScaledBmmSoftmax(), (r(2, 8, 16), r(2, 8, 16))),
    "matmul_tanh_scale": lambda: (MatmulTanhScale(), (r(7, 9), r(9, 11))),
    "conv_batchnorm_relu": lambda: (ConvBatchNormRelu(), (r(2, 3, 8, 8),)),
}

# ----------------------------------------------------------------- level 3


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64),
                                 nn.ReLU(), nn.Linear(64, 8))

    def forward(self, x):
        return self.net(x)


class SelfAttention(nn.Module):
    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        split = lambda y: y.reshape(b, t, self.heads, d // self.heads).transpose(1, 2)
        q, k, v = split(q), split(k), split(v)
        scores = (q @ k.transpose(-2, -1)) / (d // self.heads) ** 0.5
        y = torch.softmax(scores, dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(b, t, d))


class BasicBlock(nn.Module):
    def __init__(self, channels=4):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + x)


class NormGeluLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(24)
        self.fc = nn.Linear(24, 12)

    def forward(self, x):
        return self.fc(F.gelu(self.norm(x)))


class GruCell(nn.Module):
    """A GRU cell written out, gate by gate."""

    def __init__(self, inputs=10, hidden=16):
        super().__init__()
        self.x2h = nn.Linear(inputs, 3 * hidden)
        self.h2h = nn.Linear(hidden, 3 * hidden)

    def forward(self, x, h):
        xr, xz, xn = self.x2h(x).chunk(3, dim=-1)
        hr, hz, hn = self.h2h(h).chunk(3, dim=-1)
        reset = torch.sigmoid(xr + hr)
        update = torch.sigmoid(xz + hz)
        new = torch.tanh(xn + reset * hn)
        return (1 - update) * new + update * h


BLOCKS = {
    "mlp": lambda: (Mlp(), (r(8, 16),)),
    "attention": lambda: (SelfAttention(), (r(2, 6, 32),)),
    "resnet_basic_block": lambda: (BasicBlock(), (r(2, 4, 6, 6),)),
    "layernorm_gelu_linear": lambda: (NormGeluLinear(), (r(5, 24),)),
    "gru_cell": lambda: (GruCell(), (r(4, 10), r(4, 16))),
}

MODELS = {**SINGLE_OPS, **FUSIONS, **BLOCKS}
LEVELS = {**{n: 1 for n in SINGLE_OPS}, **{n: 2 for n in FUSIONS}, **{n: 3 for n in BLOCKS}}


def build(name, seed=0):
    """(module in eval mode, example inputs) of model `name`, seeded."""
    torch.manual_seed(seed)
    module, inputs = MODELS[name]()
    return module.eval(), inputs
