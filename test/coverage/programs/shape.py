"""Data movement: reshapes, permutes, concatenation, padding, flips, repeats."""

import torch
from torch.nn import functional as F

from . import fn, r

fn("shape", "reshape_then_scale", lambda: (r(4, 6, 2),), dynamic=True)(
    lambda x: x.reshape(x.shape[0], 12) * 3)
fn("shape", "flatten_linearish", lambda: (r(2, 3, 4, 4),), dynamic=True)(
    lambda x: torch.flatten(x, 1) + 1)
fn("shape", "unsqueeze_broadcast", lambda: (r(4, 6), r(4, 5)), dynamic=True)(
    lambda a, b: a.unsqueeze(2) * b.unsqueeze(1))
fn("shape", "transpose_contiguous", lambda: (r(3, 4, 5),), dynamic=True)(
    lambda x: x.transpose(1, 2).contiguous() + 1)
fn("shape", "permute_4d", lambda: (r(2, 3, 4, 5),), dynamic=True)(
    lambda x: x.permute(0, 2, 3, 1) * 2)
fn("shape", "cat_dim1", lambda: (r(3, 4), r(3, 2), r(3, 5)), dynamic=True)(
    lambda a, b, c: torch.cat([a, b, c], dim=1))
fn("shape", "stack", lambda: (r(3, 4), r(3, 4)), dynamic=True)(
    lambda a, b: torch.stack([a, b], dim=1))
fn("shape", "split_chunks", lambda: (r(4, 9),))(
    lambda x: tuple(c * (i + 1) for i, c in enumerate(torch.split(x, [2, 3, 4], dim=1))))
fn("shape", "pad_constant", lambda: (r(2, 3, 4, 4),), dynamic=True)(
    lambda x: F.pad(x, (1, 2, 0, 1), value=0.5))
fn("shape", "pad_reflect", lambda: (r(2, 3, 6),))(lambda x: F.pad(x, (2, 1), mode="reflect"))
fn("shape", "pad_replicate", lambda: (r(1, 2, 4, 4),))(
    lambda x: F.pad(x, (1, 1, 2, 0), mode="replicate"))
fn("shape", "flip", lambda: (r(4, 6),))(lambda x: torch.flip(x, dims=[1]))
fn("shape", "roll", lambda: (r(4, 6),))(lambda x: torch.roll(x, shifts=2, dims=1))
fn("shape", "repeat", lambda: (r(2, 3),))(lambda x: x.repeat(2, 3))
fn("shape", "expand_add", lambda: (r(4, 1, 5), r(3, 1)))(
    lambda a, b: a.expand(4, 3, 5) + b)
fn("shape", "pixel_shuffle", lambda: (r(1, 8, 3, 3),))(lambda x: F.pixel_shuffle(x, 2))
fn("shape", "upsample_nearest", lambda: (r(1, 2, 3, 4),))(
    lambda x: F.interpolate(x, scale_factor=2, mode="nearest"))
fn("shape", "upsample_bilinear", lambda: (r(1, 2, 3, 4),))(
    lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False))
