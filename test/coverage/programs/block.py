"""Blocks of real networks: transformer layers, ResNet, MobileNet, UNet, SE."""

import torch
from torch import nn
from torch.nn import functional as F

from . import program, r
from .attention import MultiHead
from .norm import affine


def bn(channels):
    return affine(nn.BatchNorm2d(channels))


class PreNormTransformer(nn.Module):
    """x + attn(norm(x)); x + mlp(norm(x)), GPT-style."""

    def __init__(self, dim=16, heads=4, causal=True, sdpa=False):
        super().__init__()
        self.norm1, self.norm2 = affine(nn.LayerNorm(dim)), affine(nn.LayerNorm(dim))
        self.attn = MultiHead(dim, heads, causal=causal, sdpa=sdpa)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):  # [B, T, D]
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


program("block", "transformer_prenorm_manual", dynamic=True)(
    lambda: (PreNormTransformer(), (r(2, 5, 16),)))
program("block", "transformer_prenorm_sdpa", dynamic=True)(
    lambda: (PreNormTransformer(sdpa=True), (r(2, 5, 16),)))
program("block", "nn_transformer_encoder_layer", dynamic=True)(
    lambda: (nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0,
                                        batch_first=True), (r(2, 5, 16),)))


class LlamaMlp(nn.Module):
    def __init__(self, dim=16, hidden=24):
        super().__init__()
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


program("block", "llama_mlp", dynamic=True)(lambda: (LlamaMlp(), (r(2, 5, 16),)))


class BasicBlock(nn.Module):
    def __init__(self, c_in, c_out, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = bn(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = bn(c_out)
        self.down = None
        if stride != 1 or c_in != c_out:
            self.down = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), bn(c_out))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


program("block", "resnet_basic", dynamic=True)(lambda: (BasicBlock(4, 4), (r(2, 4, 6, 6),)))
program("block", "resnet_basic_downsample", dynamic=True)(
    lambda: (BasicBlock(4, 8, stride=2), (r(2, 4, 8, 8),)))


class Bottleneck(nn.Module):
    def __init__(self, c_in=8, width=4, c_out=8):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(c_in, width, 1, bias=False), bn(width), nn.ReLU(),
            nn.Conv2d(width, width, 3, padding=1, bias=False), bn(width), nn.ReLU(),
            nn.Conv2d(width, c_out, 1, bias=False), bn(c_out))

    def forward(self, x):
        return F.relu(self.body(x) + x)


program("block", "resnet_bottleneck", dynamic=True)(lambda: (Bottleneck(), (r(2, 8, 6, 6),)))


class InvertedResidual(nn.Module):
    """MobileNetV2: expand 1x1, depthwise 3x3, project 1x1, residual."""

    def __init__(self, c=4, expand=4):
        super().__init__()
        hidden = c * expand
        self.body = nn.Sequential(
            nn.Conv2d(c, hidden, 1, bias=False), bn(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, hidden, 3, padding=1, groups=hidden, bias=False), bn(hidden),
            nn.ReLU6(),
            nn.Conv2d(hidden, c, 1, bias=False), bn(c))

    def forward(self, x):
        return x + self.body(x)


program("block", "mobilenet_inverted_residual", dynamic=True)(
    lambda: (InvertedResidual(), (r(2, 4, 7, 7),)))


class SqueezeExcite(nn.Module):
    def __init__(self, c=8, reduced=2):
        super().__init__()
        self.fc1 = nn.Conv2d(c, reduced, 1)
        self.fc2 = nn.Conv2d(reduced, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * torch.sigmoid(self.fc2(F.relu(self.fc1(s))))


program("block", "squeeze_excite", dynamic=True)(lambda: (SqueezeExcite(), (r(2, 8, 5, 5),)))


def double_conv(c_in, c_out):
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), bn(c_out), nn.ReLU(),
                         nn.Conv2d(c_out, c_out, 3, padding=1, bias=False), bn(c_out), nn.ReLU())


class UNetDown(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = double_conv(3, 6)

    def forward(self, x):
        return F.max_pool2d(self.conv(x), 2)


class UNetUp(nn.Module):
    """Upsample by a transposed conv, concatenate the skip, double conv."""

    def __init__(self, c_in=8, c_skip=4, c_out=4):
        super().__init__()
        self.up = nn.ConvTranspose2d(c_in, c_in // 2, 2, stride=2)
        self.conv = double_conv(c_in // 2 + c_skip, c_out)

    def forward(self, x, skip):
        return self.conv(torch.cat([self.up(x), skip], dim=1))


program("block", "unet_down", dynamic=True)(lambda: (UNetDown(), (r(2, 3, 8, 8),)))
program("block", "unet_up", dynamic=True)(lambda: (UNetUp(), (r(2, 8, 3, 3), r(2, 4, 6, 6))))


class UNetUpBilinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = double_conv(6, 3)

    def forward(self, x, skip):
        x = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)
        return self.conv(torch.cat([x, skip], dim=1))


program("block", "unet_up_bilinear")(
    lambda: (UNetUpBilinear(), (r(1, 3, 3, 3), r(1, 3, 6, 6))))


class ConvNeXtBlock(nn.Module):
    """Depthwise 7x7, LayerNorm over channels, pointwise MLP, residual."""

    def __init__(self, c=8):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
        self.norm = affine(nn.LayerNorm(c))
        self.pw1, self.pw2 = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)

    def forward(self, x):  # [B, C, H, W]
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.pw2(F.gelu(self.pw1(self.norm(y))))
        return x + y.permute(0, 3, 1, 2)


program("block", "convnext", dynamic=True)(lambda: (ConvNeXtBlock(), (r(2, 8, 7, 7),)))


class PatchEmbed(nn.Module):
    """ViT: patches by a strided conv, flattened to tokens, plus a class token."""

    def __init__(self, dim=12):
        super().__init__()
        self.proj = nn.Conv2d(3, dim, 4, stride=4)
        self.cls = nn.Parameter(torch.randn(1, 1, dim))

    def forward(self, x):
        tokens = self.proj(x).flatten(2).transpose(1, 2)  # [B, N, D]
        return torch.cat([self.cls.expand(x.shape[0], -1, -1), tokens], dim=1)


program("block", "vit_patch_embed", dynamic=True)(lambda: (PatchEmbed(), (r(2, 3, 8, 8),)))


class Classifier(nn.Module):
    """Conv stem, global pool, linear head, log-softmax."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), bn(6), nn.ReLU())
        self.head = nn.Linear(6, 5)

    def forward(self, x):
        return F.log_softmax(self.head(self.stem(x).mean(dim=(2, 3))), dim=-1)


program("block", "conv_classifier", dynamic=True)(lambda: (Classifier(), (r(2, 3, 6, 6),)))
