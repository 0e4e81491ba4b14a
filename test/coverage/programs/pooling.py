"""Max and average pooling in 1, 2 and 3 dims, and adaptive pooling."""

from torch import nn

from . import fn, program, r

POOLS = {
    "max_pool1d": (lambda: nn.MaxPool1d(3, stride=2), (2, 3, 11)),
    "max_pool2d": (lambda: nn.MaxPool2d(2), (2, 3, 8, 8)),
    "max_pool2d_pad_stride": (lambda: nn.MaxPool2d(3, stride=2, padding=1), (2, 3, 9, 9)),
    "max_pool2d_dilated": (lambda: nn.MaxPool2d(2, stride=1, dilation=2), (2, 2, 7, 7)),
    "max_pool3d": (lambda: nn.MaxPool3d(2), (2, 2, 4, 6, 6)),
    "avg_pool1d": (lambda: nn.AvgPool1d(2), (2, 3, 10)),
    "avg_pool2d": (lambda: nn.AvgPool2d(2), (2, 3, 8, 8)),
    "avg_pool2d_pad": (lambda: nn.AvgPool2d(3, stride=2, padding=1), (2, 3, 9, 9)),
    "avg_pool2d_pad_exclude": (
        lambda: nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), (2, 3, 9, 9)),
    "avg_pool3d": (lambda: nn.AvgPool3d(2), (2, 2, 4, 6, 6)),
    "adaptive_avg_pool1d": (lambda: nn.AdaptiveAvgPool1d(4), (2, 3, 12)),
    "adaptive_avg_pool2d_1": (lambda: nn.AdaptiveAvgPool2d(1), (2, 4, 7, 7)),
    "adaptive_avg_pool2d_uneven": (lambda: nn.AdaptiveAvgPool2d((3, 2)), (2, 3, 7, 5)),
    "adaptive_max_pool2d": (lambda: nn.AdaptiveMaxPool2d(2), (2, 3, 8, 8)),
    "adaptive_avg_pool3d": (lambda: nn.AdaptiveAvgPool3d(1), (2, 2, 4, 4, 4)),
    "lp_pool2d": (lambda: nn.LPPool2d(2, 2), (2, 3, 6, 6)),
}

for _name, (_make, _shape) in POOLS.items():
    program("pooling", _name, dynamic=True)(
        lambda make=_make, shape=_shape: (make(), (r(*shape),)))

fn("pooling", "global_max_via_amax", lambda: (r(2, 4, 5, 5),))(lambda x: x.amax(dim=(2, 3)))
