"""Convolutions: 1/2/3-d, strided, padded, dilated, grouped, depthwise, transposed."""

from torch import nn

from . import program, r

CONVS = {
    "conv1d": (lambda: nn.Conv1d(3, 5, 3), (2, 3, 12)),
    "conv1d_stride_pad": (lambda: nn.Conv1d(4, 4, 5, stride=2, padding=2), (2, 4, 16)),
    "conv2d": (lambda: nn.Conv2d(3, 6, 3), (2, 3, 8, 8)),
    "conv2d_same": (lambda: nn.Conv2d(3, 4, 3, padding="same"), (2, 3, 7, 7)),
    "conv2d_no_bias": (lambda: nn.Conv2d(3, 4, 3, padding=1, bias=False), (2, 3, 6, 6)),
    "conv2d_stride2": (lambda: nn.Conv2d(4, 8, 3, stride=2, padding=1), (2, 4, 9, 9)),
    "conv2d_rect_kernel": (lambda: nn.Conv2d(3, 4, (1, 3), padding=(0, 1)), (2, 3, 5, 6)),
    "conv2d_1x1": (lambda: nn.Conv2d(8, 4, 1), (2, 8, 5, 5)),
    "conv2d_dilated": (lambda: nn.Conv2d(3, 4, 3, dilation=2, padding=2), (2, 3, 9, 9)),
    "conv2d_grouped": (lambda: nn.Conv2d(8, 8, 3, groups=4, padding=1), (2, 8, 6, 6)),
    "conv2d_depthwise": (lambda: nn.Conv2d(6, 6, 3, groups=6, padding=1), (2, 6, 7, 7)),
    "conv2d_depthwise_multiplier": (lambda: nn.Conv2d(4, 8, 3, groups=4), (2, 4, 6, 6)),
    "conv2d_reflect_pad": (
        lambda: nn.Conv2d(3, 4, 3, padding=1, padding_mode="reflect"), (2, 3, 6, 6)),
    "conv3d": (lambda: nn.Conv3d(2, 4, 3, padding=1), (2, 2, 4, 5, 5)),
    "conv3d_stride": (lambda: nn.Conv3d(2, 3, 2, stride=2), (2, 2, 4, 6, 6)),
    "conv_transpose1d": (lambda: nn.ConvTranspose1d(4, 3, 3, stride=2), (2, 4, 7)),
    "conv_transpose2d": (lambda: nn.ConvTranspose2d(4, 3, 2, stride=2), (2, 4, 5, 5)),
    "conv_transpose2d_pad_outpad": (
        lambda: nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1),
        (2, 3, 4, 4)),
    "conv_transpose2d_grouped": (
        lambda: nn.ConvTranspose2d(4, 4, 3, stride=1, groups=2), (2, 4, 5, 5)),
    "conv_transpose3d": (lambda: nn.ConvTranspose3d(2, 2, 2, stride=2), (2, 2, 3, 3, 3)),
    "conv3d_grouped": (lambda: nn.Conv3d(4, 6, 3, groups=2), (2, 4, 5, 5, 5)),
    "conv1d_grouped": (lambda: nn.Conv1d(6, 6, 3, groups=3, padding=1), (2, 6, 9)),
    "conv_transpose3d_grouped_strided": (
        lambda: nn.ConvTranspose3d(4, 6, 3, stride=2, padding=1, groups=2), (2, 4, 3, 4, 3)),
}

for _name, (_make, _shape) in CONVS.items():
    program("conv", _name, dynamic=True)(
        lambda make=_make, shape=_shape: (make(), (r(*shape),)))
