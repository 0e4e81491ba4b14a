"""The elementwise grammar: DAGs of 1-6 productions over broadcast inputs,
drawn straight into reference programs in the compiler's canonical form
(dice.engine.program).

A production is one thing a PyTorch user writes: a unary function (43 of
them, as the compiler renders each), a binary op whose second operand is
another value, a new input of any broadcast pattern or a scalar, a
comparison and `where`, `clamp`, `lerp`, `pow`, a maximum or minimum, a
cast. Functions are kept in their domains by the guards a careful author
writes (`abs` before `sqrt`, a scale before `exp`), which are productions
too; the bounds come from the builder.
"""

import math
from dataclasses import dataclass, replace

from dice.engine.program import FLOATS, ProgramBuilder
from dice.engine.shapes import broadcast_pattern, draw_shape

# |value| above which a half-precision value is scaled down before the next
# production (products and exponentials of larger ones overflow float16).
HALF_LIMIT = 250.0
FLOAT_LIMIT = 1e6


@dataclass(frozen=True)
class Unary:
    cls: str            # the op class (splits and curriculum)
    py: object          # float -> float, for the bounds
    domain: str = "any"  # any, nonneg, pos, small (|x| <= SMALL), unit (|x| < 1), atleast1
    build: object = None  # (builder, value) -> value; None: the op `name` itself
    attrs: tuple = ()


SMALL = 8.0
# Constants every float dtype holds exactly (a float32 0.1 would come back
# from the compiler as a float64 constant and a cast), never an identity.
CONSTANTS = (0.5, 2.0, 1.5, 3.0, 0.25, 0.125, 0.75, 10.0, 4.0, 0.375)
SCALES = tuple(2.0 ** -k for k in (1, 2, 3, 4, 5, 6, 8, 10, 12, 14, 17))


def _clip(f):
    def safe(x):
        try:
            y = f(x)
        except (OverflowError, ValueError, ZeroDivisionError):
            return math.inf
        return y if math.isfinite(y) else math.inf
    return safe


def _sigmoid(x):
    return 1 / (1 + math.exp(-x)) if x > -700 else 0.0


def _softplus(x):
    return x if x > 20 else math.log1p(math.exp(x))


def _full(b, v, value):
    return b.full(value, (1,) * v.rank, v.dtype)


def _relu(b, v):
    zero = _full(b, v, 0.0)
    return b.op("where", [b.op("gt", [v, zero], dtype="bool"), v, zero], lo=0, hi=max(v.hi, 0))


def _clamp_to(b, v, lo, hi):
    low, high = _full(b, v, lo), _full(b, v, hi)
    t = b.op("where", [b.op("lt", [v, low], dtype="bool"), low, v])
    return b.op("where", [b.op("gt", [t, high], dtype="bool"), high, t], lo=lo, hi=hi)


def _compare_scalar(b, fn, v, value):
    """`v <fn> value` for a Python float: torch-mlir compares in float64."""
    wide = b.op("to", [v], dtype="float64", lo=v.lo, hi=v.hi)
    return b.op(fn, [wide, b.scalar(value, "float64")], dtype="bool")


def _hardshrink(b, v, lam=0.5):
    keep = _compare_scalar(b, "gt", b.op("abs", [v], lo=0, hi=v.bound), lam)
    return b.op("where", [keep, v, _full(b, v, 0.0)], lo=v.lo, hi=v.hi)


def _sign(b, v):
    zero = _full(b, v, 0.0)
    pos = b.op("where", [b.op("gt", [v, zero], dtype="bool"), _full(b, v, 1.0), zero])
    return b.op("where", [b.op("lt", [v, zero], dtype="bool"), _full(b, v, -1.0), pos],
                lo=-1, hi=1)


def _scalar_op(b, fn, v, value, **bounds):
    return b.op(fn, [v, b.scalar(value, v.dtype)], **bounds)


UNARY = {
    # smooth activations
    "sigmoid": Unary("smooth", _sigmoid),
    "tanh": Unary("smooth", math.tanh),
    "silu": Unary("smooth", lambda x: x * _sigmoid(x)),
    "gelu": Unary("smooth", lambda x: 0.5 * x * (1 + math.erf(x / math.sqrt(2)))),
    "gelu_tanh": Unary("smooth", lambda x: 0.5 * x * (1 + math.tanh(
        0.7978845608 * (x + 0.044715 * x ** 3)))),
    "mish": Unary("smooth", lambda x: x * math.tanh(_softplus(x))),
    "softplus": Unary("smooth", _softplus, attrs=(("value", 20.0),)),
    "elu": Unary("smooth", lambda x: x if x > 0 else math.expm1(x), attrs=(("value", 1.0),)),
    "celu": Unary("smooth", lambda x: x if x > 0 else 0.5 * math.expm1(x / 0.5),
                  attrs=(("value", 0.5),)),
    "selu": Unary("smooth", lambda x: 1.0507 * (x if x > 0 else 1.6733 * math.expm1(x))),
    "logsigmoid": Unary("smooth", lambda x: min(x, 0) - math.log1p(math.exp(-abs(x)))),
    "erf": Unary("smooth", math.erf),
    "swish_beta": Unary("smooth", lambda x: x * _sigmoid(1.5 * x), build=lambda b, v: b.op(
        "mul", [v, b.op("sigmoid", [_scalar_op(b, "mul", v, 1.5)])])),
    # piecewise-linear activations
    "relu": Unary("piecewise", lambda x: max(x, 0.0), build=_relu),
    "relu6": Unary("piecewise", lambda x: min(max(x, 0.0), 6.0)),
    "leaky_relu": Unary("piecewise", lambda x: x if x > 0 else 0.1 * x,
                        attrs=(("value", 0.1),)),
    "hardsigmoid": Unary("piecewise", lambda x: min(max(x + 3, 0), 6) / 6),
    "hardswish": Unary("piecewise", lambda x: x * min(max(x + 3, 0), 6) / 6),
    "hardtanh": Unary("piecewise", lambda x: min(max(x, -1.0), 1.0),
                      build=lambda b, v: _clamp_to(b, v, -1.0, 1.0)),
    "clamp": Unary("piecewise", lambda x: min(max(x, -0.5), 2.0),
                   build=lambda b, v: _clamp_to(b, v, -0.5, 2.0)),
    "hardshrink": Unary("piecewise", lambda x: x if abs(x) > 0.5 else 0.0, build=_hardshrink),
    "abs": Unary("piecewise", abs),
    "neg": Unary("piecewise", lambda x: -x),
    "sign": Unary("piecewise", lambda x: float((x > 0) - (x < 0)), build=_sign),
    # exponentials, logarithms, powers
    "exp": Unary("exponential", math.exp, "small"),
    "expm1": Unary("exponential", math.expm1, "small"),
    "log": Unary("exponential", math.log, "pos"),
    "log1p": Unary("exponential", math.log1p, "nonneg"),
    "sqrt": Unary("exponential", math.sqrt, "nonneg"),
    "rsqrt": Unary("exponential", lambda x: 1 / math.sqrt(x), "pos"),
    "reciprocal": Unary("exponential", lambda x: 1 / x, "pos", build=lambda b, v: b.op(
        "div", [_full(b, v, 1.0), v])),
    "square": Unary("exponential", lambda x: x * x, build=lambda b, v: b.op("mul", [v, v])),
    "cube": Unary("exponential", lambda x: x ** 3,
                  build=lambda b, v: b.op("mul", [b.op("mul", [v, v]), v])),
    "gaussian": Unary("exponential", lambda x: math.exp(-x * x), "small", build=lambda b, v: b.op(
        "exp", [b.op("neg", [b.op("mul", [v, v])])])),
    # rational
    "softsign": Unary("rational", lambda x: x / (1 + abs(x)), build=lambda b, v: b.op(
        "div", [v, _scalar_op(b, "add", b.op("abs", [v]), 1.0)])),
    "tanhshrink": Unary("rational", lambda x: x - math.tanh(x),
                        build=lambda b, v: b.op("sub", [v, b.op("tanh", [v])])),
    # trigonometric
    "sin": Unary("trig", math.sin),
    "cos": Unary("trig", math.cos),
    "tan": Unary("trig", math.tan, "small"),
    "atan": Unary("trig", math.atan),
    "asin": Unary("trig", math.asin, "unit"),
    "acos": Unary("trig", math.acos, "unit"),
    # hyperbolic
    "sinh": Unary("hyperbolic", math.sinh, "small"),
    "cosh": Unary("hyperbolic", math.cosh, "small"),
    "asinh": Unary("hyperbolic", math.asinh),
    "acosh": Unary("hyperbolic", math.acosh, "atleast1"),
    "atanh": Unary("hyperbolic", math.atanh, "unit"),
    # logarithms of other bases
    "log2": Unary("exponential", math.log2, "pos"),
    "log10": Unary("exponential", math.log10, "pos"),
    # rounding
    "floor": Unary("rounding", math.floor),
    "ceil": Unary("rounding", math.ceil),
    "round": Unary("rounding", round),
}
# tan's small domain is narrower: keep it off its poles.
DOMAIN_LIMIT = {"tan": 1.2}
# |x| within which asin, acos and atanh are taken: atanh(0.9) is 1.47.
UNIT_LIMIT = 0.9


def _range(py, lo, hi):
    """Approximate [min, max] of py over [lo, hi]: a grid and the ends, and
    a fine grid over [-8, 8], where the smooth activations have their
    extrema (gelu's -0.17 at -0.75): a wide interval's grid steps over them,
    and a minimum taken as 0 lets sqrt(gelu(x)) through unguarded."""
    f = _clip(py)
    fine = [k / 16 for k in range(-128, 129) if lo <= k / 16 <= hi]
    points = [lo + (hi - lo) * k / 64 for k in range(65)] + fine
    ys = [f(x) for x in points]
    if any(math.isinf(y) for y in ys):
        return -math.inf, math.inf
    return min(ys), max(ys)


class Grammar:
    """Draws one program. `rng` is a random.Random; `exclude` names
    primitives (productions) never drawn."""

    def __init__(self, rng, exclude=()):
        self.rng = rng
        self.unaries = [name for name in UNARY if name not in exclude]
        self.smooth_unaries = [name for name in self.unaries if UNARY[name].cls != "rounding"]
        self.binaries = [op for op in ("add", "sub", "mul", "div", "maximum", "minimum",
                                       "pow", "atan2") if op not in exclude]

    # --- guards ----------------------------------------------------------------
    def squash(self, b, v, limit):
        """v scaled into [-limit, limit] by a round constant."""
        if v.bound <= limit:
            return v
        for c in SCALES:
            if v.bound * c <= limit:
                break
        self.used.append("scale")
        return _scalar_op(b, "mul", v, c, lo=v.lo * c, hi=v.hi * c)

    def limit(self, v):
        return HALF_LIMIT if v.dtype in ("float16", "bfloat16") else FLOAT_LIMIT

    def into_domain(self, b, name, v):
        domain = UNARY[name].domain
        if domain == "small":
            return self.squash(b, v, DOMAIN_LIMIT.get(name, SMALL))
        if domain == "unit":  # an open interval: asin, acos and atanh of +-1 are edges
            return self.squash(b, v, UNIT_LIMIT)
        if domain in ("nonneg", "pos", "atleast1") and \
                v.lo < {"nonneg": 0, "pos": 1e-3, "atleast1": 1}[domain]:
            v = b.op("abs", [v], lo=0, hi=v.bound)
            if domain != "nonneg":
                v = _scalar_op(b, "add", v, 1.0, lo=1.0, hi=v.hi + 1)
        return v

    def finish(self, b, v):
        """An epilogue of 0-2 productions after a family's main op `v`, then
        (the program returning it, the productions drawn)."""
        pool = [v]
        for _ in range(self.rng.choice((0, 1, 1, 2))):
            v = self.unary(b, v) if self.rng.random() < 0.5 else self.binary(b, v, pool)
            pool.append(v)
        return b.build([v]), [u for u in self.used if u != "scale"]

    # --- productions -----------------------------------------------------------
    def unary(self, b, v, name=None):
        # A rounding function jumps at every integer: after a function that
        # PyTorch and a kernel may round differently in the last place, the
        # two would disagree by 1 wherever the value sits at an integer
        # (floor(erf(x)) at erf's saturation), so it takes exact values only.
        choices = self.unaries if v.exact else self.smooth_unaries
        name = name or self.rng.choice(choices)
        u = UNARY[name]
        v = self.into_domain(b, name, self.squash(b, v, self.limit(v)))
        lo, hi = _range(u.py, v.lo, v.hi)
        if u.build:
            out = u.build(b, v)
            out = replace(out, lo=lo, hi=hi)
        else:
            out = b.op(name, [v], lo=lo, hi=hi, **dict(u.attrs))
        self.used.append(name)
        return out

    def operand(self, b, v, pool):
        """A second operand for v: an earlier value, a new input of a
        broadcast pattern, or a scalar (None)."""
        r = self.rng.random()
        others = [p for p in pool if p.key != v.key]
        if r < 0.25 and others:
            return self.rng.choice(others)
        if r < 0.75 and self.shape:  # (a 0-d result takes scalars)
            if self.rng.random() < 0.15:
                channel = self.channel_input(b)
                if channel is not None:
                    return channel
            shape = broadcast_pattern(self.rng, self.shape)
            return self.new_input(b, shape)
        return None

    def channel_input(self, b):
        """A vector along one dim that is not the last, viewed at the
        program's rank as a user writes it, `w.view(1, -1, 1, 1)` (a
        per-channel scale or shift); None for a shape without such a dim."""
        shape = self.shape
        dims = [d for d in range(len(shape) - 1) if shape[d] > 1]
        if not dims:
            return None
        d = self.rng.choice(dims)
        lift = (1,) * d + (shape[d],) + (1,) * (len(shape) - d - 1)
        return self.new_input(b, (shape[d],), lift)

    def new_input(self, b, shape, lift=None):
        x = replace(b.input(shape, self.dtype), lift=lift)
        if self.compute_dtype != self.dtype:
            x = b.op("to", [x], dtype=self.compute_dtype, lo=x.lo, hi=x.hi)
        return x

    def binary(self, b, v, pool):
        op = self.rng.choice(self.binaries)
        w = self.operand(b, v, pool)
        limit = self.limit(v)
        v = self.squash(b, v, limit)
        if w is None:  # a scalar
            return self.scalar_binary(b, op, v)
        w = self.squash(b, w, limit)
        self.used.append(op)
        if op in ("add", "sub"):
            return b.op(op, [v, w], lo=v.lo - w.bound, hi=v.hi + w.bound)
        if op == "mul":
            bound = v.bound * w.bound
            return b.op("mul", [v, w], lo=-bound, hi=bound)
        if op == "div":  # a denominator kept away from 0
            den = _scalar_op(b, "add", b.op("abs", [w], lo=0, hi=w.bound), 1.0,
                             lo=1.0, hi=w.bound + 1)
            return b.op("div", [v, den], lo=-v.bound, hi=v.bound)
        if op in ("maximum", "minimum"):  # as the compiler renders them
            pick = b.op("gt" if op == "maximum" else "lt", [v, w], dtype="bool")
            return b.op("where", [pick, v, w], lo=min(v.lo, w.lo), hi=max(v.hi, w.hi))
        if op == "atan2":
            if not v.exact:  # off its branch cut (y = 0, x < 0), where rounding flips it by 2 pi
                w = _scalar_op(b, "add", b.op("abs", [w], lo=0, hi=w.bound), 1.0,
                               lo=1.0, hi=w.bound + 1)
            return b.op("atan2", [v, w], lo=-math.pi, hi=math.pi)
        # pow: a positive base, a bounded exponent
        base = _scalar_op(b, "add", b.op("abs", [self.squash(b, v, 4.0)]), 0.5)
        base = replace(base, lo=0.5, hi=4.5)
        exponent = self.squash(b, w, 2.0)
        return b.op("pow", [base, exponent], lo=0, hi=4.5 ** 2)

    def scalar_binary(self, b, op, v):
        rng = self.rng
        c = rng.choice(CONSTANTS)
        if op in ("pow",):
            n = rng.choice((2, 3))
            self.used.append("pow")
            base = self.squash(b, v, 30.0 if n == 2 else 8.0)
            bound = base.bound ** n
            return b.op("pow", [base, b.scalar(n, "int64")],
                        lo=0 if n == 2 else -bound, hi=bound)
        if op in ("maximum", "minimum", "atan2"):
            op = rng.choice(("add", "mul"))
        self.used.append(op)
        if rng.random() < 0.25 and op in ("sub", "div"):  # the constant first: c - v, c / v
            if op == "div":
                v = self.into_domain(b, "rsqrt", v)
                return b.op("div", [_full(b, v, c), v], lo=0, hi=c / max(v.lo, 1e-3))
            return b.op("sub", [_full(b, v, c), v], lo=c - v.hi, hi=c - v.lo)
        if op == "div":
            return _scalar_op(b, "div", v, c, lo=v.lo / c, hi=v.hi / c)
        if op == "mul":
            return _scalar_op(b, "mul", v, c, lo=-v.bound * c, hi=v.bound * c)
        sign = 1 if op == "add" else -1
        return _scalar_op(b, op, v, c, lo=v.lo + sign * c, hi=v.hi + sign * c)

    def select(self, b, v, pool):
        """where(v <cmp> other, v, other-or-a-new-value)."""
        fn = self.rng.choice(("gt", "ge", "lt", "le"))
        w = self.operand(b, v, pool)
        self.used.append("where")
        if self.rng.random() < 0.25:  # a mask argument: masked_fill, where(mask, v, w)
            cond = b.input(broadcast_pattern(self.rng, v.shape), "bool", lo=0, hi=1)
            other = w if w is not None else _full(b, v, self.rng.choice(CONSTANTS))
        elif w is None:
            cond = _compare_scalar(b, fn, v, self.rng.choice((0.0, 0.5, -1.0, 1.0)))
            other = self.unary(b, v)
        else:
            cond = b.op(fn, [v, w], dtype="bool")
            other = w
        return b.op("where", [cond, v, other], lo=min(v.lo, other.lo), hi=max(v.hi, other.hi))

    def lerp(self, b, v, pool):
        """v + weight * (end - v), the weight a scalar or a tensor."""
        end = self.operand(b, v, pool) or self.unary(b, v)
        v, end = self.squash(b, v, self.limit(v)), self.squash(b, end, self.limit(v))
        self.used.append("lerp")
        diff = b.op("sub", [end, v])
        if self.rng.random() < 0.5:
            step = _scalar_op(b, "mul", diff, self.rng.choice((0.25, 0.5, 0.75, 0.125)))
        else:
            weight = self.unary(b, self.new_input(b, broadcast_pattern(self.rng, self.shape)),
                                "sigmoid")
            step = b.op("mul", [weight, diff])
        bound = v.bound + end.bound
        return b.op("add", [v, step], lo=-bound, hi=bound)

    # --- a whole program -------------------------------------------------------
    def draw(self, size=None):
        """(program, used productions). size: productions, 1-6."""
        rng = self.rng
        self.used = []
        self.dtype = rng.choice(FLOATS + ("float32",))
        half = self.dtype != "float32"
        size = size or rng.randint(1, 6)
        # Half programs compute in float32 between casts a third of the time
        # (with one production, f(x.to(float32)).to(x.dtype) is f(x): the
        # compiler renders it so).
        cast = half and size > 1 and rng.random() < 0.33
        self.compute_dtype = "float32" if cast else self.dtype
        if cast:
            self.used.append("cast")
        self.shape = draw_shape(rng)
        b = ProgramBuilder()
        v = self.new_input(b, self.shape)
        pool = [v]
        while len([u for u in self.used if u not in ("scale", "cast")]) < size:
            r = rng.random()
            if r < 0.45:
                v = self.unary(b, v)
            elif r < 0.8:
                v = self.binary(b, v, pool)
            elif r < 0.92:
                v = self.select(b, v, pool)
            else:
                v = self.lerp(b, v, pool)
            pool.append(v)
        outputs = [v]
        if v.shape != self.shape:  # only broadcast operands reached the end
            v = b.op("add", [v, pool[0]])
            outputs = [v]
        if self.compute_dtype != self.dtype:
            outputs = [b.op("to", [v], dtype=self.dtype)]
        elif not half and rng.random() < 0.08:
            self.used.append("cast")
            outputs = [b.op("to", [v], dtype=rng.choice(("float16", "bfloat16")))]
        extra = [p for p in pool[1:-1] if p.shape == self.shape and p.dtype == outputs[0].dtype]
        if extra and rng.random() < 0.12:
            outputs.append(rng.choice(extra))
        return b.build(outputs), [u for u in self.used if u != "scale"]
