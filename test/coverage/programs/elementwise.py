"""Arithmetic and math functions elementwise, with broadcasting and scalars."""

import torch

from . import fn, r


def one(*shape):
    return lambda: (r(*shape),)


def two(a, b):
    return lambda: (r(*a), r(*b))


fn("elementwise", "add_broadcast", two((4, 8), (8,)), dynamic=(0,))(lambda a, b: a + b)
fn("elementwise", "sub_broadcast_col", two((4, 8), (4, 1)), dynamic=True)(lambda a, b: a - b)
fn("elementwise", "mul_3d_broadcast", two((2, 3, 5), (3, 1)), dynamic=(0,))(
    lambda a, b: a * b)
fn("elementwise", "div", two((4, 8), (4, 8)), dynamic=True)(
    lambda a, b: a / (b.abs() + 0.5))
fn("elementwise", "scalar_affine", one(6, 7), dynamic=True)(lambda x: x * 1.5 - 0.25)
fn("elementwise", "rsub_scalar", one(6, 7))(lambda x: 2.0 - x)
fn("elementwise", "maximum_minimum", two((5, 6), (5, 6)), dynamic=True)(
    lambda a, b: torch.maximum(a, b) - torch.minimum(a, b))
fn("elementwise", "clamp", one(4, 10), dynamic=True)(lambda x: torch.clamp(x, -0.5, 0.8))
fn("elementwise", "clamp_min", one(4, 10))(lambda x: x.clamp_min(0.1))
fn("elementwise", "exp_log", one(4, 10), positive=True, dynamic=True)(
    lambda x: torch.exp(x) + torch.log(x))
fn("elementwise", "log1p_expm1", one(4, 10), positive=True)(
    lambda x: torch.log1p(x) * torch.expm1(x))
fn("elementwise", "sqrt_rsqrt", one(4, 10), positive=True, dynamic=True)(
    lambda x: torch.sqrt(x) + torch.rsqrt(x))
fn("elementwise", "pow_scalar", one(4, 10), positive=True)(lambda x: x ** 2.5)
fn("elementwise", "square_cube", one(4, 10))(lambda x: x * x + x ** 3)
fn("elementwise", "pow_tensor", two((4, 10), (4, 10)), positive=True)(lambda a, b: a ** b)
fn("elementwise", "abs_neg", one(4, 10), dynamic=True)(lambda x: -torch.abs(x))
fn("elementwise", "sign", one(4, 10))(torch.sign)
fn("elementwise", "reciprocal", one(4, 10), positive=True)(torch.reciprocal)
fn("elementwise", "trig", one(4, 10))(lambda x: torch.sin(x) * torch.cos(x) + torch.tan(x * 0.3))
fn("elementwise", "atan2", two((4, 10), (4, 10)))(torch.atan2)
fn("elementwise", "erf", one(4, 10))(torch.erf)
fn("elementwise", "rounding", one(4, 10))(
    lambda x: torch.floor(x * 3) + torch.ceil(x * 2) + torch.round(x * 5) + torch.trunc(x * 7))
fn("elementwise", "fmod_remainder", one(4, 10))(
    lambda x: torch.fmod(x * 5, 1.5) + torch.remainder(x * 5, 1.5))
fn("elementwise", "lerp", two((4, 10), (4, 10)))(lambda a, b: torch.lerp(a, b, 0.3))
fn("elementwise", "addcmul", lambda: (r(4, 8), r(4, 8), r(8)))(
    lambda a, b, c: torch.addcmul(a, b, c, value=0.5))
fn("elementwise", "cast_to_half_back", one(4, 10))(lambda x: x.half().float() * 2)
fn("elementwise", "int_arith", lambda: (torch.randint(0, 50, (4, 6)),))(
    lambda i: (i * 3 + 7) // 2)
fn("elementwise", "int_to_float", lambda: (torch.randint(0, 50, (4, 6)),))(
    lambda i: i.float() / 7.0)
fn("elementwise", "compare_to_float", two((4, 10), (4, 10)), dynamic=True)(
    lambda a, b: (a > b).float() + (a <= 0.2).float())
fn("elementwise", "isnan_nan_to_num", one(4, 10))(
    lambda x: torch.nan_to_num(torch.log(x), nan=0.0, neginf=-5.0))

# A Python int argument: a dynamic int stays an argument of the function
# (static, torch.export bakes it in), and a kernel takes it as a 0-d tensor.
int_arg = lambda *shape: lambda: (r(*shape), 3)  # noqa: E731
fn("elementwise", "int_scale_and_shift", int_arg(4, 8), dynamic=True)(lambda x, n: x * n + n)
fn("elementwise", "int_divisor", int_arg(4, 8), dynamic=True)(lambda x, n: x / (n + 1))
fn("elementwise", "int_bounds", int_arg(4, 10), dynamic=True)(
    lambda x, n: torch.clamp(x * 10, -n, n))
fn("elementwise", "int_polynomial", int_arg(4, 6), dynamic=True)(lambda x, n: x + n * n - 2 * n)
fn("elementwise", "int_arith_on_ints", lambda: (torch.randint(0, 50, (4, 6)), 4), dynamic=True)(
    lambda a, n: (a * n - n) // 3)
