//===- RaiseCompoundOps.cpp - decompositions back to torch functions ------===//
//
// Each pattern is written against the dataflow torch-mlir's decompositions
// produce, as the reference builder renders it: keepdim reductions appear as
// a reduction followed by reshapes back to the kept shape, and constants as
// 0-d scalars (possibly cast to the tensor's dtype). Commutative operands are
// tried both ways; nothing else is assumed. Patterns match at their root (the
// op whose value is the function's result) and are tried in program order, so
// an inner function raised first (softplus) is what an outer one (mish)
// matches.
//
//===----------------------------------------------------------------------===//

#include "dice/Reference/RaiseCompoundOps.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <map>
#include <numbers>
#include <optional>
#include <utility>

namespace dice {
namespace {

/// How far a constant stored in `dtype` may be from the exact one, relative:
/// the decomposition rounds sqrt(2/pi) or 0.044715 to the program's dtype.
double precisionOf(DType dtype) {
  switch (dtype) {
  case DType::Float64:
    return 0x1p-50;
  case DType::Float32:
    return 0x1p-23;
  case DType::Float16:
    return 0x1p-10;
  case DType::BFloat16:
    return 0x1p-7;
  default:
    return 0; // integers and bools: exact
  }
}

/// sqrt(2 / pi) as torch-mlir's tanh-GELU decomposition spells it: with pi
/// taken as 22/7, 2e-4 off. The raised GELU is PyTorch's, exact.
constexpr double kTorchMlirSqrt2OverPi = 0.7977240085601807;

/// A reduction over `dims` of `source`.
struct Reduction {
  int source;
  std::vector<int64_t> dims;
};

class Matcher {
public:
  explicit Matcher(const ReferenceProgram &program)
      : p(program), numInputs(static_cast<int>(program.inputs.size())) {}

  /// The compound op that value `root` computes, or nullopt.
  std::optional<RefOp> match(int root) const {
    const RefOp *op = def(root);
    if (!op)
      return std::nullopt;
    if (!isFloatingPoint(op->type.dtype))
      return integerFloorDivision(root);
    for (auto pattern :
         {&Matcher::sigmoid, &Matcher::silu, &Matcher::geluErf, &Matcher::geluTanh,
          &Matcher::softplus, &Matcher::mish, &Matcher::hardsigmoid, &Matcher::hardswish,
          &Matcher::leakyRelu, &Matcher::elu, &Matcher::celu, &Matcher::relu6,
          &Matcher::logsigmoid,
          &Matcher::softmax, &Matcher::logSoftmax, &Matcher::logsumexp, &Matcher::layerNorm,
          &Matcher::rmsNorm, &Matcher::normWeight, &Matcher::normBias, &Matcher::groupNorm,
          &Matcher::narrowed})
      if (std::optional<RefOp> compound = (this->*pattern)(root))
        return compound;
    return std::nullopt;
  }

  /// The index `i` that `v` wraps as torch-mlir does before an index op,
  /// `where(i < 0, i + size, i)`, or nullopt.
  std::optional<int> unwrappedIndex(int v, int64_t size) const {
    const RefOp *wrap = def(v);
    if (!wrap || wrap->fn != RefFn::Where)
      return std::nullopt;
    int index = wrap->args[2];
    const RefOp *negative = def(wrap->args[0]);
    bool wraps = negative && negative->fn == RefFn::Lt && negative->args[0] == index &&
                 constantIs(negative->args[1], 0) &&
                 binary(wrap->args[1], RefFn::Add, [&](int i, int n) {
                   return i == index && constantIs(n, static_cast<double>(size));
                 });
    return wraps ? std::optional<int>(index) : std::nullopt;
  }

private:
  const ReferenceProgram &p;
  int numInputs;

  //===--- Looking at values ----------------------------------------------===//

  const RefOp *def(int v) const {
    return v >= numInputs ? &p.ops[v - numInputs] : nullptr;
  }
  bool is(int v, RefFn fn) const {
    const RefOp *d = def(v);
    return d && d->fn == fn;
  }
  const TensorType &type(int v) const { return p.typeOf(v); }

  /// `v` without the reshapes around it: a keepdim reduction or a broadcast
  /// weight reaches its consumer through one or more reshapes.
  int peel(int v) const {
    while (is(v, RefFn::Reshape))
      v = def(v)->args[0];
    return v;
  }

  /// `v` without casts between floating dtypes (reshapes kept: a group
  /// norm's variance is over the grouped view of its input).
  int withoutCasts(int v) const {
    while (is(v, RefFn::To) && isFloatingPoint(type(v).dtype) &&
           isFloatingPoint(type(def(v)->args[0]).dtype))
      v = def(v)->args[0];
    return v;
  }

  /// `v` without reshapes and casts between floating dtypes.
  int peelCasts(int v) const {
    for (;;) {
      v = peel(v);
      if (!is(v, RefFn::To) || !isFloatingPoint(type(v).dtype) ||
          !isFloatingPoint(type(def(v)->args[0]).dtype))
        return v;
      v = def(v)->args[0];
    }
  }

  /// The value of a constant operand and how precisely its dtypes hold it: a
  /// scalar or splat through reshapes, expands, casts to a floating dtype,
  /// and the square roots decompositions take of constants (sqrt(2)).
  std::optional<std::pair<double, double>> constantValue(int v) const {
    const RefOp *d = def(v);
    if (!d)
      return std::nullopt;
    double precision = precisionOf(d->type.dtype);
    if (d->fn == RefFn::Scalar || d->fn == RefFn::Full)
      return std::pair{d->value, precision};
    bool passes = d->fn == RefFn::Reshape || d->fn == RefFn::Expand || d->fn == RefFn::Sqrt ||
                  (d->fn == RefFn::To && isFloatingPoint(d->type.dtype));
    std::optional<std::pair<double, double>> c =
        passes ? constantValue(d->args[0]) : std::nullopt;
    if (!c)
      return std::nullopt;
    double value = d->fn == RefFn::Sqrt ? std::sqrt(c->first) : c->first;
    return std::pair{value, std::max(precision, c->second)};
  }

  /// Whether `v` is the constant `expected`, at the precision of the
  /// coarsest dtype that holds it on the way.
  bool constantIs(int v, double expected) const {
    std::optional<std::pair<double, double>> c = constantValue(v);
    if (!c)
      return false;
    if (expected == 0 || std::isinf(expected))
      return c->first == expected;
    return std::fabs(c->first - expected) <= c->second * std::fabs(expected);
  }

  std::optional<double> constantOf(int v) const {
    std::optional<std::pair<double, double>> c = constantValue(v);
    return c ? std::optional<double>(c->first) : std::nullopt;
  }

  /// Calls `match(a, b)` with the operands of `v` when `v` is `fn(a, b)`, and
  /// again swapped where `fn` commutes.
  template <typename Match> bool binary(int v, RefFn fn, Match match) const {
    const RefOp *d = def(v);
    if (!d || d->fn != fn || d->args.size() != 2)
      return false;
    if (match(d->args[0], d->args[1]))
      return true;
    bool commutes = fn == RefFn::Add || fn == RefFn::Mul;
    return commutes && match(d->args[1], d->args[0]);
  }

  /// The operand of `v` when `v` is `fn(operand)`.
  std::optional<int> unary(int v, RefFn fn) const {
    const RefOp *d = def(v);
    if (!d || d->fn != fn || d->args.size() != 1)
      return std::nullopt;
    return d->args[0];
  }

  /// An elementwise function's argument must have the result's type.
  bool sameType(int a, int b) const { return type(a) == type(b); }

  //===--- Reductions, kept ------------------------------------------------===//

  /// The shape of `r` with its reduced dims kept as 1.
  std::optional<std::vector<int64_t>> keptShape(const Reduction &r) const {
    std::vector<int64_t> shape = type(r.source).shape;
    for (int64_t d : r.dims) {
      if (d < 0 || d >= static_cast<int64_t>(shape.size()))
        return std::nullopt;
      shape[d] = 1;
    }
    return shape;
  }

  /// `v` is `fn(source, dims)` reshaped back to the kept shape (keepdim=True).
  std::optional<Reduction> keptReduction(int v, RefFn fn) const {
    const RefOp *d = def(peel(v));
    if (!d || d->fn != fn || !d->ints.count("dims"))
      return std::nullopt;
    Reduction r{d->args[0], d->ints.at("dims")};
    if (r.dims.empty() || keptShape(r) != type(v).shape ||
        type(v).dtype != type(r.source).dtype)
      return std::nullopt;
    return r;
  }

  /// `v` is a kept row maximum, bare or as torch-mlir guards it before an
  /// exp: `where(abs(m) == inf, 0, m)`.
  std::optional<Reduction> keptMax(int v) const {
    int guarded = peel(v);
    if (const RefOp *w = def(guarded); w && w->fn == RefFn::Where && constantIs(w->args[1], 0)) {
      int m = w->args[2];
      bool infinityTest = binary(w->args[0], RefFn::Eq, [&](int a, int b) {
        std::optional<int> abs = unary(peelCasts(a), RefFn::Abs);
        return abs && peel(*abs) == peel(m) && constantIs(b, INFINITY);
      });
      std::optional<Reduction> r = infinityTest ? keptReduction(m, RefFn::Amax) : std::nullopt;
      if (r && type(v).shape == type(m).shape)
        return r;
      return std::nullopt;
    }
    return keptReduction(v, RefFn::Amax);
  }

  /// The number of elements a reduction combines, where it is static.
  std::optional<int64_t> countOf(const Reduction &r) const {
    int64_t count = 1;
    for (int64_t d : r.dims) {
      int64_t size = type(r.source).shape.at(d);
      if (isSymbolicSize(size))
        return std::nullopt;
      count *= size;
    }
    return count;
  }

  /// `v` is the kept mean of `source` over `dims`: a sum divided by the
  /// number of elements summed.
  std::optional<Reduction> keptMean(int v) const {
    std::optional<Reduction> mean;
    binary(peel(v), RefFn::Div, [&](int sum, int count) {
      std::optional<Reduction> r = keptReduction(sum, RefFn::Sum);
      std::optional<int64_t> n = r ? countOf(*r) : std::nullopt;
      if (!n || !constantIs(count, static_cast<double>(*n)))
        return false;
      mean = r;
      return true;
    });
    if (!mean || keptShape(*mean) != type(v).shape)
      return std::nullopt;
    return mean;
  }

  /// `v` is `a * a` or `a ** 2`.
  std::optional<int> squareOf(int v) const {
    if (const RefOp *d = def(v); d && d->fn == RefFn::Mul && d->args.size() == 2 &&
                                 d->args[0] == d->args[1])
      return d->args[0];
    std::optional<int> base;
    binary(v, RefFn::Pow, [&](int a, int e) {
      if (constantIs(e, 2))
        base = a;
      return base.has_value();
    });
    return base;
  }

  /// `v` is the biased variance of `x` over `dims`, kept; the decomposition
  /// may compute it in a wider dtype and cast back.
  bool isVariance(int v, int x, const std::vector<int64_t> &dims) const {
    std::optional<Reduction> meanSquare = keptMean(peelCasts(v));
    if (!meanSquare || meanSquare->dims != dims)
      return false;
    std::optional<int> centred = squareOf(meanSquare->source);
    return centred && binary(*centred, RefFn::Sub, [&](int wide, int mean) {
             std::optional<Reduction> m = keptMean(mean);
             return m && m->dims == dims && m->source == wide &&
                    (peelCasts(wide) == x || withoutCasts(wide) == x);
           });
  }

  /// The dims `[rank - k, rank)`: a norm's normalized shape is trailing.
  static bool trailing(const std::vector<int64_t> &dims, size_t rank) {
    for (size_t i = 0; i < dims.size(); ++i)
      if (dims[i] != static_cast<int64_t>(rank - dims.size() + i))
        return false;
    return !dims.empty();
  }

  /// `v` is `rsqrt(variance + eps)` kept to `shape`; returns eps.
  std::optional<double> reciprocalStd(int v, const std::vector<int64_t> &shape,
                                      const std::function<bool(int)> &isVar) const {
    if (type(v).shape != shape)
      return std::nullopt;
    std::optional<int> sum = unary(peel(v), RefFn::Rsqrt);
    std::optional<double> eps;
    if (sum)
      binary(*sum, RefFn::Add, [&](int var, int e) {
        eps = isVar(var) ? constantOf(e) : std::nullopt;
        return eps.has_value();
      });
    return eps;
  }

  //===--- Building the compound op ---------------------------------------===//

  static RefOp compound(RefFn fn, std::vector<int> args,
                        std::map<std::string, std::vector<int64_t>> ints = {},
                        double value = 0) {
    RefOp op;
    op.fn = fn;
    op.args = std::move(args);
    op.ints = std::move(ints);
    op.value = value;
    return op;
  }

  /// `fn(x)` when `root` is elementwise over `x` (same shape and dtype).
  std::optional<RefOp> elementwise(RefFn fn, int root, std::optional<int> x,
                                   double value = 0) const {
    if (!x || !sameType(*x, root))
      return std::nullopt;
    return compound(fn, {*x}, {}, value);
  }

  //===--- Activations ------------------------------------------------------===//

  /// 1 / (1 + exp(-x)), or reciprocal(1 + exp(-x)).
  std::optional<RefOp> sigmoid(int root) const {
    std::optional<int> x;
    auto onePlusExp = [&](int d) {
      return binary(d, RefFn::Add, [&](int e, int one) {
        std::optional<int> neg = unary(e, RefFn::Exp);
        x = neg && constantIs(one, 1) ? unary(*neg, RefFn::Neg) : std::nullopt;
        return x.has_value();
      });
    };
    std::optional<int> r = unary(root, RefFn::Reciprocal);
    if (!(r && onePlusExp(*r)))
      binary(root, RefFn::Div, [&](int one, int d) { return constantIs(one, 1) && onePlusExp(d); });
    return elementwise(RefFn::Sigmoid, root, x);
  }

  /// `f(x.float()).to(x.dtype)` is `f(x)`: torch-mlir computes float16 and
  /// bfloat16 functions in float32 and rounds once, as PyTorch's own kernels
  /// for them do. `f` is a function raised before, of the cast input alone.
  std::optional<RefOp> narrowed(int root) const {
    const RefOp *down = def(root);
    if (!down || down->fn != RefFn::To || down->args.size() != 1)
      return std::nullopt;
    int wide = down->args[0];
    const RefOp *f = def(wide);
    if (!f || !isCompound(f->fn) || f->args.size() != 1 || usesOf(wide) != 1)
      return std::nullopt;
    const RefOp *up = def(f->args[0]);
    if (!up || up->fn != RefFn::To || up->args.size() != 1)
      return std::nullopt;
    int x = up->args[0];
    DType narrow = type(root).dtype;
    if ((narrow != DType::Float16 && narrow != DType::BFloat16) ||
        type(wide).dtype != DType::Float32 || type(x).dtype != narrow ||
        type(x).shape != type(f->args[0]).shape)
      return std::nullopt;
    RefOp op = *f;
    op.args = {x};
    return op;
  }

  static bool isCompound(RefFn fn) {
    switch (fn) {
    case RefFn::Sigmoid:
    case RefFn::Softmax:
    case RefFn::LogSoftmax:
    case RefFn::Logsumexp:
    case RefFn::LayerNorm:
    case RefFn::RmsNorm:
      return true;
    default:
      return refFnInfo(fn).category == RefCategory::Compound;
    }
  }

  /// `floor(a.double() / b.double()).long()` of int64 `a` and `b`: how
  /// torch-mlir writes `a // b` of integer tensors. float64 holds the
  /// quotient exactly only below 2^53, so it becomes torch's integer floor
  /// division, exact for every int64, as eager PyTorch computes it.
  std::optional<RefOp> integerFloorDivision(int root) const {
    if (type(root).dtype != DType::Int64)
      return std::nullopt;
    std::optional<int> rounded = unary(root, RefFn::To);
    std::optional<int> quotient = rounded ? unary(*rounded, RefFn::Floor) : std::nullopt;
    auto wideInteger = [&](int v) -> std::optional<int> {
      std::optional<int> x = unary(v, RefFn::To);
      if (!x || type(v).dtype != DType::Float64 || type(*x).dtype != DType::Int64)
        return std::nullopt;
      return x;
    };
    std::optional<RefOp> raised;
    if (quotient && type(*rounded).dtype == DType::Float64)
      binary(*quotient, RefFn::Div, [&](int a, int b) {
        std::optional<int> x = wideInteger(a), y = wideInteger(b);
        if (x && y)
          raised = compound(RefFn::DivFloor, {*x, *y});
        return raised.has_value();
      });
    return raised;
  }

  /// x * sigmoid(x) (a decomposed sigmoid is raised before, at its own root).
  std::optional<RefOp> silu(int root) const {
    std::optional<int> x;
    binary(root, RefFn::Mul, [&](int a, int s) {
      if (unary(s, RefFn::Sigmoid) == a)
        x = a;
      return x.has_value();
    });
    return elementwise(RefFn::Silu, root, x);
  }

  /// `x * h` or `(x * 0.5) * t` with `h = t * 0.5`: the two shapes GELU's
  /// outer product takes; `isInner(x, t)` checks `t = 1 + f(x)`.
  template <typename Inner> std::optional<int> halfTimes(int root, Inner isInner) const {
    std::optional<int> x;
    binary(root, RefFn::Mul, [&](int a, int h) {
      // x * (t * 0.5)
      if (binary(h, RefFn::Mul, [&](int t, int half) {
            return constantIs(half, 0.5) && isInner(a, t);
          }))
        x = a;
      // (x * 0.5) * t
      binary(a, RefFn::Mul, [&](int xa, int half) {
        if (!x && constantIs(half, 0.5) && isInner(xa, h))
          x = xa;
        return x.has_value();
      });
      return x.has_value();
    });
    return x;
  }

  /// `t = 1 + g` for `g` that `isG` accepts.
  template <typename IsG> bool onePlus(int t, IsG isG) const {
    return binary(t, RefFn::Add, [&](int g, int one) { return constantIs(one, 1) && isG(g); });
  }

  /// 0.5 * x * (1 + erf(x / sqrt(2))).
  std::optional<RefOp> geluErf(int root) const {
    std::optional<int> x = halfTimes(root, [&](int a, int t) {
      return onePlus(t, [&](int g) {
        std::optional<int> q = unary(g, RefFn::Erf);
        return q && (binary(*q, RefFn::Div, [&](int v, int c) {
                       return v == a && constantIs(c, std::numbers::sqrt2);
                     }) ||
                     binary(*q, RefFn::Mul, [&](int v, int c) {
                       return v == a && constantIs(c, 1 / std::numbers::sqrt2);
                     }));
      });
    });
    return elementwise(RefFn::Gelu, root, x);
  }

  /// 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))).
  std::optional<RefOp> geluTanh(int root) const {
    auto cube = [&](int v, int a) {
      if (binary(v, RefFn::Pow, [&](int b, int e) { return b == a && constantIs(e, 3); }))
        return true;
      return binary(v, RefFn::Mul, [&](int sq, int b) {
        return b == a && squareOf(sq) == a;
      });
    };
    std::optional<int> x = halfTimes(root, [&](int a, int t) {
      return onePlus(t, [&](int g) {
        std::optional<int> q = unary(g, RefFn::Tanh);
        return q && binary(*q, RefFn::Mul, [&](int inner, int k) {
                 return (constantIs(k, std::numbers::sqrt2 * std::numbers::inv_sqrtpi) ||
                         constantIs(k, kTorchMlirSqrt2OverPi)) &&
                        binary(inner, RefFn::Add, [&](int v, int term) {
                          return v == a && binary(term, RefFn::Mul, [&](int c3, int c) {
                                   return constantIs(c, 0.044715) && cube(c3, a);
                                 });
                        });
               });
      });
    });
    return elementwise(RefFn::GeluTanh, root, x);
  }

  /// where(x > threshold, x, log1p(exp(x))): softplus with beta 1. The
  /// comparison may read x widened to float64 (a float16 or bfloat16 input's
  /// softplus, computed in float32, compares that way).
  std::optional<RefOp> softplus(int root) const {
    const RefOp *w = def(root);
    if (!w || w->fn != RefFn::Where)
      return std::nullopt;
    int x = w->args[1];
    std::optional<double> threshold;
    binary(w->args[0], RefFn::Gt, [&](int a, int t) {
      std::optional<int> widened = unary(a, RefFn::To);
      bool isX = a == x || (widened == x && type(a).dtype == DType::Float64);
      threshold = isX ? constantOf(t) : std::nullopt;
      return threshold.has_value();
    });
    std::optional<int> e = unary(w->args[2], RefFn::Log1p);
    if (!threshold || !e || unary(*e, RefFn::Exp) != x)
      return std::nullopt;
    return elementwise(RefFn::Softplus, root, x, *threshold);
  }

  /// x * tanh(softplus(x)), softplus at its default threshold (20).
  std::optional<RefOp> mish(int root) const {
    std::optional<int> x;
    binary(root, RefFn::Mul, [&](int a, int t) {
      std::optional<int> s = unary(t, RefFn::Tanh);
      if (s && unary(*s, RefFn::Softplus) == a && def(*s)->value == 20)
        x = a;
      return x.has_value();
    });
    return elementwise(RefFn::Mish, root, x);
  }

  /// clamp(x + 3, 0, 6) as `where(!(t <= 6), 6, where(!(s >= 0), 0, s))`;
  /// returns x.
  std::optional<int> clampedPlusThree(int v) const {
    auto clampSide = [&](int w, RefFn test, double bound) -> std::optional<int> {
      const RefOp *d = def(w);
      if (!d || d->fn != RefFn::Where || !constantIs(d->args[1], bound))
        return std::nullopt;
      int inner = d->args[2];
      std::optional<int> c = unary(d->args[0], RefFn::LogicalNot);
      bool ok = c && binary(*c, test, [&](int a, int b) {
                  return a == inner && constantIs(b, bound);
                });
      return ok ? std::optional<int>(inner) : std::nullopt;
    };
    std::optional<int> low = clampSide(v, RefFn::Le, 6);
    std::optional<int> shifted = low ? clampSide(*low, RefFn::Ge, 0) : std::nullopt;
    std::optional<int> x;
    if (shifted)
      binary(*shifted, RefFn::Add, [&](int a, int three) {
        if (constantIs(three, 3))
          x = a;
        return x.has_value();
      });
    return x;
  }

  /// clamp(x + 3, 0, 6) / 6.
  std::optional<RefOp> hardsigmoid(int root) const {
    std::optional<int> x;
    binary(root, RefFn::Div, [&](int c, int six) {
      x = constantIs(six, 6) ? clampedPlusThree(c) : std::nullopt;
      return x.has_value();
    });
    return elementwise(RefFn::Hardsigmoid, root, x);
  }

  /// x * clamp(x + 3, 0, 6) / 6.
  std::optional<RefOp> hardswish(int root) const {
    std::optional<int> x;
    binary(root, RefFn::Div, [&](int m, int six) {
      return constantIs(six, 6) && binary(m, RefFn::Mul, [&](int a, int c) {
               if (clampedPlusThree(c) == a)
                 x = a;
               return x.has_value();
             });
    });
    return elementwise(RefFn::Hardswish, root, x);
  }

  /// `where(0 > x, 0, x)` (relu, `positive`) or `where(0 < x, 0, x)`
  /// (min(x, 0)), as torch-mlir spells both halves of the piecewise
  /// activations; returns x. Either keeps a NaN.
  std::optional<int> clampedAtZero(int v, bool positive) const {
    const RefOp *w = def(v);
    if (!w || w->fn != RefFn::Where || w->args.size() != 3 || !constantIs(w->args[1], 0))
      return std::nullopt;
    int x = w->args[2];
    const RefOp *c = def(w->args[0]);
    if (!c || c->fn != (positive ? RefFn::Gt : RefFn::Lt) || c->args.size() != 2 ||
        !constantIs(c->args[0], 0) || c->args[1] != x || !sameType(x, v))
      return std::nullopt;
    return x;
  }

  /// relu(x) + min(x, 0) * slope.
  std::optional<RefOp> leakyRelu(int root) const {
    std::optional<int> x;
    std::optional<double> slope;
    binary(root, RefFn::Add, [&](int pos, int neg) {
      x = clampedAtZero(pos, true);
      return x && binary(neg, RefFn::Mul, [&](int m, int k) {
               slope = clampedAtZero(m, false) == x ? constantOf(k) : std::nullopt;
               return slope.has_value();
             });
    });
    return slope ? elementwise(RefFn::LeakyRelu, root, x, *slope) : std::nullopt;
  }

  /// `v` is `(exp(min(x, 0)) - 1)`, times `alpha` where there is one;
  /// returns x and alpha.
  std::optional<std::pair<int, double>> expMinusOne(int v) const {
    auto bare = [&](int e) -> std::optional<int> {
      std::optional<int> x;
      binary(e, RefFn::Sub, [&](int ex, int one) {
        std::optional<int> m = constantIs(one, 1) ? unary(ex, RefFn::Exp) : std::nullopt;
        x = m ? clampedAtZero(*m, false) : std::nullopt;
        return x.has_value();
      });
      return x;
    };
    if (std::optional<int> x = bare(v))
      return std::pair{*x, 1.0};
    std::optional<std::pair<int, double>> found;
    binary(v, RefFn::Mul, [&](int e, int alpha) {
      std::optional<int> x = bare(e);
      std::optional<double> a = x ? constantOf(alpha) : std::nullopt;
      if (a)
        found = std::pair{*x, *a};
      return found.has_value();
    });
    return found;
  }

  /// relu(x) + alpha * (exp(min(x, 0)) - 1): ELU; with both halves scaled
  /// by SELU's constants, SELU.
  std::optional<RefOp> elu(int root) const {
    std::optional<RefOp> op;
    binary(root, RefFn::Add, [&](int pos, int neg) {
      if (std::optional<int> x = clampedAtZero(pos, true)) {
        std::optional<std::pair<int, double>> e = expMinusOne(neg);
        if (e && e->first == *x)
          op = elementwise(RefFn::Elu, root, x, e->second);
        return op.has_value();
      }
      // selu: relu(x) * scale + ((exp(min(x, 0)) - 1) * scale) * alpha
      constexpr double kScale = 1.0507009873554805, kAlpha = 1.6732632423543772;
      binary(pos, RefFn::Mul, [&](int r, int scale) {
        std::optional<int> x = constantIs(scale, kScale) ? clampedAtZero(r, true) : std::nullopt;
        if (!x)
          return false;
        binary(neg, RefFn::Mul, [&](int scaled, int alpha) {
          return constantIs(alpha, kAlpha) && binary(scaled, RefFn::Mul, [&](int e, int s) {
                   std::optional<std::pair<int, double>> em = expMinusOne(e);
                   if (constantIs(s, kScale) && em && em->first == *x && em->second == 1.0)
                     op = elementwise(RefFn::Selu, root, x);
                   return op.has_value();
                 });
        });
        return op.has_value();
      });
      return op.has_value();
    });
    return op;
  }

  /// where(x > 0, x, expm1(x / alpha) * alpha).
  std::optional<RefOp> celu(int root) const {
    const RefOp *w = def(root);
    if (!w || w->fn != RefFn::Where || w->args.size() != 3)
      return std::nullopt;
    int x = w->args[1];
    std::optional<double> alpha;
    bool positive = binary(w->args[0], RefFn::Gt, [&](int a, int zero) {
      return a == x && constantIs(zero, 0);
    });
    if (positive)
      binary(w->args[2], RefFn::Mul, [&](int e, int a) {
        std::optional<int> q = unary(e, RefFn::Expm1);
        std::optional<double> k = constantOf(a);
        if (q && k && *k != 0 && binary(*q, RefFn::Div, [&](int v, int d) {
              return v == x && constantIs(d, *k);
            }))
          alpha = k;
        return alpha.has_value();
      });
    return alpha ? elementwise(RefFn::Celu, root, x, *alpha) : std::nullopt;
  }

  /// where(6 < t, 6, t) with t = where(x > 0, x, 0): hardtanh(x, 0, 6) as
  /// torch-mlir's two selects spell it (a NaN becomes 0 there; F.relu6
  /// keeps it, as the user's function does).
  std::optional<RefOp> relu6(int root) const {
    const RefOp *hi = def(root);
    if (!hi || hi->fn != RefFn::Where || hi->args.size() != 3 || !constantIs(hi->args[1], 6))
      return std::nullopt;
    int t = hi->args[2];
    const RefOp *lo = def(t);
    bool clipped = binary(hi->args[0], RefFn::Lt, [&](int six, int v) {
      return v == t && constantIs(six, 6);
    });
    if (!clipped || !lo || lo->fn != RefFn::Where || lo->args.size() != 3 ||
        !constantIs(lo->args[2], 0))
      return std::nullopt;
    int x = lo->args[1];
    bool positive = binary(lo->args[0], RefFn::Gt, [&](int a, int zero) {
      return a == x && constantIs(zero, 0);
    });
    return positive ? elementwise(RefFn::Relu6, root, x) : std::nullopt;
  }

  /// min(x, 0) - log1p(exp(-|x|)).
  std::optional<RefOp> logsigmoid(int root) const {
    std::optional<int> x;
    binary(root, RefFn::Sub, [&](int m, int l) {
      x = clampedAtZero(m, false);
      std::optional<int> e = x ? unary(l, RefFn::Log1p) : std::nullopt;
      std::optional<int> n = e ? unary(*e, RefFn::Exp) : std::nullopt;
      std::optional<int> a = n ? unary(*n, RefFn::Neg) : std::nullopt;
      if (!a || unary(*a, RefFn::Abs) != x)
        x.reset();
      return x.has_value();
    });
    return elementwise(RefFn::Logsigmoid, root, x);
  }

  //===--- Row functions ----------------------------------------------------===//

  /// `v` is `x - max(x, dims)` with the max kept: the shifted rows of a
  /// softmax; returns the reduction.
  std::optional<Reduction> shiftedByMax(int v) const {
    std::optional<Reduction> r;
    binary(v, RefFn::Sub, [&](int x, int m) {
      r = keptMax(m);
      if (r && r->source != x)
        r.reset();
      return r.has_value();
    });
    if (r && !sameType(v, r->source))
      r.reset();
    return r;
  }

  /// `fn(source, dim)` for a softmax-like `root` over one dim of its source.
  std::optional<RefOp> rowFunction(RefFn fn, int root,
                                   const std::optional<Reduction> &r) const {
    if (!r || r->dims.size() != 1 || !sameType(root, r->source))
      return std::nullopt;
    return compound(fn, {r->source}, {{"dim", r->dims}});
  }

  /// e / sum(e) with e = exp(x - max(x)), over one dim.
  std::optional<RefOp> softmax(int root) const {
    std::optional<Reduction> r;
    binary(root, RefFn::Div, [&](int e, int s) {
      std::optional<int> shifted = unary(e, RefFn::Exp);
      r = shifted ? shiftedByMax(*shifted) : std::nullopt;
      std::optional<Reduction> sum = r ? keptReduction(s, RefFn::Sum) : std::nullopt;
      if (!sum || sum->source != e || sum->dims != r->dims)
        r.reset();
      return r.has_value();
    });
    return rowFunction(RefFn::Softmax, root, r);
  }

  /// s - log(sum(exp(s))) with s = x - max(x), over one dim.
  std::optional<RefOp> logSoftmax(int root) const {
    std::optional<Reduction> r;
    binary(root, RefFn::Sub, [&](int s, int l) {
      r = shiftedByMax(s);
      std::optional<int> sum = r ? unary(peel(l), RefFn::Log) : std::nullopt;
      std::optional<Reduction> kept = sum ? keptReduction(*sum, RefFn::Sum) : std::nullopt;
      if (!kept || kept->dims != r->dims || unary(kept->source, RefFn::Exp) != s ||
          type(l).shape != keptShape(*r))
        r.reset();
      return r.has_value();
    });
    return rowFunction(RefFn::LogSoftmax, root, r);
  }

  /// log(sum(exp(x - m))) + m, m the guarded max of x over dims.
  std::optional<RefOp> logsumexp(int root) const {
    std::optional<Reduction> r;
    binary(root, RefFn::Add, [&](int l, int m) {
      std::optional<int> sum = unary(l, RefFn::Log);
      const RefOp *s = sum ? def(*sum) : nullptr;
      if (!s || s->fn != RefFn::Sum || !s->ints.count("dims"))
        return false;
      std::optional<int> e = unary(s->args[0], RefFn::Exp);
      r = e ? shiftedByMax(*e) : std::nullopt;
      // Both uses of the max are the same (guarded) value.
      bool sameMax = r && binary(*e, RefFn::Sub, [&](int, int mk) { return peel(mk) == peel(m); });
      if (!sameMax || r->dims != s->ints.at("dims"))
        r.reset();
      return r.has_value();
    });
    if (!r || type(root).dtype != type(r->source).dtype)
      return std::nullopt;
    return compound(RefFn::Logsumexp, {r->source}, {{"dims", r->dims}});
  }

  //===--- Norms ------------------------------------------------------------===//

  static RefOp norm(RefFn fn, std::vector<int> args, size_t normalized, double eps) {
    return compound(fn, std::move(args),
                    {{"normalized", {static_cast<int64_t>(normalized)}}, {"affine", {0, 0}}},
                    eps);
  }

  /// (x - mean(x)) * rsqrt(var(x) + eps) over trailing dims.
  std::optional<RefOp> layerNorm(int root) const {
    std::optional<RefOp> op;
    binary(root, RefFn::Mul, [&](int centred, int rstd) {
      binary(centred, RefFn::Sub, [&](int x, int mean) {
        std::optional<Reduction> m = keptMean(mean);
        if (!m || m->source != x || !trailing(m->dims, type(x).shape.size()) ||
            !sameType(x, root))
          return false;
        std::optional<double> eps = reciprocalStd(
            rstd, *keptShape(*m), [&](int var) { return isVariance(var, x, m->dims); });
        if (eps)
          op = norm(RefFn::LayerNorm, {x}, m->dims.size(), *eps);
        return op.has_value();
      });
      return op.has_value();
    });
    return op;
  }

  /// x * rsqrt(mean(x * x) + eps) over trailing dims.
  std::optional<RefOp> rmsNorm(int root) const {
    std::optional<RefOp> op;
    binary(root, RefFn::Mul, [&](int x, int rstd) {
      if (!sameType(x, root) || type(x).shape.empty())
        return false;
      std::vector<int64_t> shape = type(x).shape;
      std::optional<Reduction> ms;
      std::optional<double> eps = reciprocalStd(rstd, type(rstd).shape, [&](int var) {
        ms = keptMean(var);
        return ms && squareOf(ms->source) == x && trailing(ms->dims, shape.size()) &&
               keptShape(*ms) == type(rstd).shape;
      });
      if (eps)
        op = norm(RefFn::RmsNorm, {x}, ms->dims.size(), *eps);
      return op.has_value();
    });
    return op;
  }

  /// x * a + (-mean * a + bias), `a = rstd * weight` per group and
  /// channel, mean and rstd over the grouped view of x [N, G, C/G, rest]:
  /// torch's decomposition of an affine group norm. (Without the affine
  /// part it is a layer norm of the grouped view, raised as one.)
  std::optional<RefOp> groupNorm(int root) const {
    std::optional<RefOp> op;
    binary(root, RefFn::Add, [&](int scaled, int shifted) {
      return binary(scaled, RefFn::Mul, [&](int x, int a4) {
        const std::vector<int64_t> &shape = type(x).shape;
        if (!sameType(x, root) || shape.size() < 2 || !is(a4, RefFn::Reshape) ||
            !is(shifted, RefFn::Reshape))
          return false;
        int a = peel(a4), b = peel(shifted); // reshapes not folded yet
        std::optional<RefOp> found;
        binary(a, RefFn::Mul, [&](int rstd, int weight) {
          binary(b, RefFn::Add, [&](int meanTimesA, int bias) {
            return binary(meanTimesA, RefFn::Mul, [&](int negMean, int a2) {
              std::optional<int> mean = unary(peel(negMean), RefFn::Neg);
              std::optional<Reduction> m = mean ? keptMean(*mean) : std::nullopt;
              if (a2 != a || !m || !is(m->source, RefFn::Reshape) || peel(m->source) != x)
                return false;
              // The grouped view [N, G, C/G, rest] and its statistics per group.
              const std::vector<int64_t> &view = type(m->source).shape;
              if (view.size() != 4 || view[0] != shape[0] || view[1] < 1 ||
                  view[1] * view[2] != shape[1] || m->dims != std::vector<int64_t>{2, 3})
                return false;
              std::vector<int64_t> perChannel = {1, view[1], view[2], 1};
              if (type(weight).shape != perChannel || type(bias).shape != perChannel ||
                  type(a).shape != std::vector<int64_t>{shape[0], view[1], view[2], 1})
                return false;
              std::optional<double> eps =
                  reciprocalStd(rstd, *keptShape(*m),
                                [&](int var) { return isVariance(var, m->source, m->dims); });
              if (eps)
                found = compound(RefFn::GroupNorm, {x, weight, bias}, {{"groups", {view[1]}}}, *eps);
              return found.has_value();
            });
          });
          return found.has_value();
        });
        op = found;
        return op.has_value();
      });
    });
    return op;
  }

  /// How many ops read `v` (and whether it is an output).
  int usesOf(int v) const {
    int uses = 0;
    for (const RefOp &op : p.ops)
      for (int a : op.args)
        uses += a == v;
    for (int out : p.outputs)
      uses += out == v;
    return uses;
  }

  /// `v`, a norm raised without the affine part `slot` (0 weight, 1 bias),
  /// read only here; `param` a tensor of the normalized shape broadcast
  /// against it. Returns the norm with the parameter taken in.
  std::optional<RefOp> takeAffine(int root, int v, int param, size_t slot) const {
    const RefOp *n = def(v);
    if (!n || (n->fn != RefFn::LayerNorm && n->fn != RefFn::RmsNorm) ||
        (slot == 1 && n->fn != RefFn::LayerNorm) || n->ints.at("affine")[slot] ||
        (slot == 0 && n->ints.at("affine")[1]) || usesOf(v) != 1 || !sameType(v, root))
      return std::nullopt;
    const std::vector<int64_t> &shape = type(v).shape;
    size_t k = static_cast<size_t>(n->ints.at("normalized")[0]);
    std::vector<int64_t> normalized(shape.end() - k, shape.end());
    int w = peel(param);
    if (type(w).shape != normalized || type(w).dtype != type(v).dtype)
      return std::nullopt;
    std::vector<int64_t> broadcast(shape.size() - k, 1);
    broadcast.insert(broadcast.end(), normalized.begin(), normalized.end());
    if (type(param).shape != broadcast && type(param).shape != normalized)
      return std::nullopt;
    RefOp taken = *n;
    taken.args.push_back(w);
    taken.ints["affine"][slot] = 1;
    return taken;
  }

  /// norm(x) * weight.
  std::optional<RefOp> normWeight(int root) const {
    std::optional<RefOp> op;
    binary(root, RefFn::Mul, [&](int n, int w) { return (op = takeAffine(root, n, w, 0)).has_value(); });
    return op;
  }

  /// layer_norm(x) (* weight) + bias.
  std::optional<RefOp> normBias(int root) const {
    std::optional<RefOp> op;
    binary(root, RefFn::Add, [&](int n, int b) { return (op = takeAffine(root, n, b, 1)).has_value(); });
    return op;
  }
};

/// reshape(reshape(x)) reads as reshape(x); a reshape to its operand's own
/// type is the operand (unless it is returned: an output is a new tensor).
void foldReshapes(ReferenceProgram &program) {
  int numInputs = static_cast<int>(program.inputs.size());
  std::vector<int> replacement(program.inputs.size() + program.ops.size());
  for (size_t v = 0; v < replacement.size(); ++v)
    replacement[v] = static_cast<int>(v);
  std::vector<bool> returned(replacement.size(), false);
  for (int out : program.outputs)
    returned[out] = true;
  for (size_t i = 0; i < program.ops.size(); ++i) {
    RefOp &op = program.ops[i];
    for (int &a : op.args)
      a = replacement[a];
    if (op.fn != RefFn::Reshape)
      continue;
    int source = op.args[0];
    while (source >= numInputs && program.ops[source - numInputs].fn == RefFn::Reshape)
      source = program.ops[source - numInputs].args[0];
    op.args[0] = source;
    if (program.typeOf(source) == op.type && !returned[numInputs + i])
      replacement[numInputs + i] = source;
  }
}

/// A value written into a constant tensor, itself written into a constant
/// tensor of the same value, is the value written once into the outer one,
/// at the composed offsets and strides. F.conv_transpose's input, spread
/// out into zeros, is one strided write in the compiler's rendering, but
/// that write printed (`t[.., a:b:s, c:d:u] = x`) exports as one write a
/// dim; folding them keeps a program its own reference.
void foldSpreads(ReferenceProgram &program) {
  int numInputs = static_cast<int>(program.inputs.size());
  auto fill = [&](int v) -> const RefOp * {
    if (v < numInputs || program.ops[v - numInputs].fn != RefFn::Full)
      return nullptr;
    return &program.ops[v - numInputs];
  };
  for (RefOp &op : program.ops) {
    while (op.fn == RefFn::InsertSlice && op.args[0] >= numInputs) {
      const RefOp &inner = program.ops[op.args[0] - numInputs];
      const RefOp *outerFill = fill(op.args[1]);
      const RefOp *innerFill = inner.fn == RefFn::InsertSlice ? fill(inner.args[1]) : nullptr;
      if (!outerFill || !innerFill || outerFill->type.dtype != innerFill->type.dtype ||
          std::bit_cast<uint64_t>(outerFill->value) != std::bit_cast<uint64_t>(innerFill->value))
        break;
      const std::vector<int64_t> &sizes = inner.ints.at("sizes");
      if (op.ints.at("sizes") != inner.type.shape ||
          std::any_of(sizes.begin(), sizes.end(), isSymbolicSize) || !inner.type.isStatic())
        break;
      std::vector<int64_t> offsets = op.ints.at("offsets"), strides = op.ints.at("strides");
      const std::vector<int64_t> &innerOffsets = inner.ints.at("offsets"),
                                 &innerStrides = inner.ints.at("strides");
      if (offsets.size() != innerOffsets.size())
        break;
      for (size_t d = 0; d < offsets.size(); ++d) {
        offsets[d] += strides[d] * innerOffsets[d];
        strides[d] *= innerStrides[d];
      }
      op.ints["offsets"] = offsets;
      op.ints["strides"] = strides;
      op.ints["sizes"] = sizes;
      op.args[0] = inner.args[0];
    }
  }
}

/// An `index` reads its source as PyTorch's advanced indexing does, where a
/// negative index counts from the end; torch-mlir spells that out before
/// every index, `where(i < 0, i + n, i)`, n the size indexed. The wrap is
/// the index op's own meaning, so it is folded into it: otherwise the
/// printed `x[i]`, exported again, would gain a second wrap, and a program
/// would never be its own reference.
void foldIndexWraps(ReferenceProgram &program) {
  Matcher matcher(program); // reads the wraps; only the index ops' args change
  for (RefOp &op : program.ops) {
    if (op.fn != RefFn::Index)
      continue;
    const std::vector<int64_t> &source = program.typeOf(op.args[0]).shape;
    for (size_t k = 1; k < op.args.size() && k - 1 < source.size(); ++k)
      if (!isSymbolicSize(source[k - 1]))
        if (std::optional<int> index = matcher.unwrappedIndex(op.args[k], source[k - 1]))
          op.args[k] = *index;
  }
}

/// A reshape of an arange that only inserts or drops dims of size 1 is the
/// arange laid along the reshape's dim (torch-mlir makes `arange(n)` and
/// then views it; the printer writes the view into the arange).
void foldArangeViews(ReferenceProgram &program) {
  int numInputs = static_cast<int>(program.inputs.size());
  auto along = [](const std::vector<int64_t> &shape) {
    int dim = -1;
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] != 1) {
        if (dim >= 0)
          return -2;
        dim = static_cast<int>(d);
      }
    return dim;
  };
  for (RefOp &op : program.ops) {
    if (op.fn != RefFn::Reshape || op.args[0] < numInputs)
      continue;
    const RefOp &arange = program.ops[op.args[0] - numInputs];
    if (arange.fn != RefFn::Arange)
      continue;
    int from = along(arange.type.shape), to = along(op.type.shape);
    if (from < 0 || to < 0 || arange.ints.at("dim") != std::vector<int64_t>{from})
      continue;
    RefOp laid = arange;
    laid.type = op.type;
    laid.ints["dim"] = {to};
    op = std::move(laid);
  }
}

/// Drops the ops no output depends on, renumbering the rest; `raised`, one
/// flag an op, follows the ops it flags.
void pruneUnused(ReferenceProgram &program, std::vector<bool> &raised) {
  size_t numInputs = program.inputs.size();
  std::vector<bool> live(numInputs + program.ops.size(), false);
  for (int out : program.outputs)
    live[out] = true;
  for (size_t i = program.ops.size(); i-- > 0;)
    if (live[numInputs + i])
      for (int a : program.ops[i].args)
        live[a] = true;
  std::vector<int> renumber(live.size(), -1);
  for (size_t v = 0; v < numInputs; ++v)
    renumber[v] = static_cast<int>(v);
  std::vector<RefOp> kept;
  std::vector<bool> keptRaised;
  for (size_t i = 0; i < program.ops.size(); ++i) {
    if (!live[numInputs + i])
      continue;
    RefOp op = std::move(program.ops[i]);
    for (int &a : op.args)
      a = renumber[a];
    renumber[numInputs + i] = static_cast<int>(numInputs + kept.size());
    kept.push_back(std::move(op));
    keptRaised.push_back(raised[i]);
  }
  program.ops = std::move(kept);
  raised = std::move(keptRaised);
  for (int &out : program.outputs)
    out = renumber[out];
}

} // namespace

std::vector<RefFn> raiseCompoundOps(ReferenceProgram &program) {
  int numInputs = static_cast<int>(program.inputs.size());
  std::vector<bool> raised(program.ops.size(), false);
  for (size_t i = 0; i < program.ops.size(); ++i) {
    std::optional<RefOp> op = Matcher(program).match(numInputs + static_cast<int>(i));
    if (!op)
      continue;
    op->type = program.ops[i].type;
    program.ops[i] = std::move(*op);
    raised[i] = true;
  }
  foldIndexWraps(program);
  foldArangeViews(program);
  foldReshapes(program);
  foldSpreads(program);
  // A norm that took in its weight leaves the norm raised before it unused,
  // a folded wrap, view or spread its ops.
  pruneUnused(program, raised);
  std::vector<RefFn> fns;
  for (size_t i = 0; i < program.ops.size(); ++i)
    if (raised[i])
      fns.push_back(program.ops[i].fn);
  return fns;
}

} // namespace dice
