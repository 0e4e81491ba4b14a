//===- AtenExecutor.cpp - reference program -> ATen calls -----------------===//
//
// Each op is the ATen overload that the printed torch call dispatches to,
// including where a constant is a Python number (at::Scalar, promoted as a
// wrapped number) and where it is a 0-d tensor: see ReferenceOperands.h.
//
//===----------------------------------------------------------------------===//

#include "dice/Reference/AtenExecutor.h"
#include "dice/Reference/ReferenceOperands.h"

#include <ATen/ATen.h>
#include <ATen/ScalarOps.h>

#include <sstream>

namespace dice {
namespace {

std::string shapeString(at::IntArrayRef shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

std::string typeString(const TensorType &type) {
  return std::string(dtypeName(type.dtype)) + " " + shapeString(type.shape);
}

std::string typeString(const at::Tensor &tensor) {
  auto dtype = fromScalarType(tensor.scalar_type());
  return std::string(dtype ? dtypeName(*dtype)
                           : c10::toString(tensor.scalar_type())) +
         " " + shapeString(tensor.sizes());
}

/// The number a constant prints as: Python bool, int or float.
at::Scalar numberOf(double value, DType dtype) {
  if (dtype == DType::Bool)
    return at::Scalar(value != 0);
  if (!isFloatingPoint(dtype))
    return at::Scalar(static_cast<int64_t>(value));
  return at::Scalar(value);
}

/// An operand of an elementwise op: a tensor, or a Python number.
struct Operand {
  at::Tensor tensor;
  std::optional<at::Scalar> number;

  /// What torch's Python binding makes of a number passed for a tensor.
  at::Tensor asTensor() const {
    return number ? at::native::wrapped_scalar_tensor(*number) : tensor;
  }
};

/// A binary function's operands as ATen receives them where torch's Python
/// binding takes a number (RefNumbers): `call` is instantiated only with
/// the operand types the rule can pass, so a function without an at::Scalar
/// overload needs none.
template <RefNumbers Numbers, typename Call>
at::Tensor binary(const Operand &a, const Operand &b, Call call) {
  if constexpr (Numbers == RefNumbers::Wrapped) {
    return call(a.asTensor(), b.asTensor());
  } else if constexpr (Numbers == RefNumbers::ScalarEither) {
    if (a.number)
      return call(*a.number, b.tensor);
    return b.number ? call(a.tensor, *b.number) : call(a.tensor, b.tensor);
  } else if constexpr (Numbers == RefNumbers::ScalarSecond) {
    return b.number ? call(a.tensor, *b.number) : call(a.tensor, b.tensor);
  } else {
    return call(a.tensor, b.tensor);
  }
}

/// A failed attribute or operand check inside an op; caught per op.
struct OpError {
  std::string message;
};

class Executor {
public:
  Executor(const ReferenceProgram &program, c10::Device device)
      : program(program), device(device) {}

  std::string run(const std::vector<at::Tensor> &inputs,
                  std::vector<at::Tensor> &outputs) {
    values = inputs;
    for (size_t i = 0; i < program.ops.size(); ++i) {
      const RefOp &op = program.ops[i];
      std::string where = "op " + std::to_string(i) + " ('" + refFnName(op.fn) + "')";
      at::Tensor result;
      try {
        result = apply(op);
      } catch (const OpError &e) {
        return where + ": " + e.message;
      } catch (const c10::Error &e) {
        return where + ": " + firstLine(e.what_without_backtrace());
      } catch (const std::exception &e) {
        return where + ": " + firstLine(e.what());
      }
      if (result.sizes() != at::IntArrayRef(op.type.shape) ||
          result.scalar_type() != toScalarType(op.type.dtype))
        return where + ": computes " + typeString(result) +
               " but the program declares " + typeString(op.type);
      values.push_back(std::move(result));
    }
    for (int v : program.outputs)
      outputs.push_back(values[v]);
    return "";
  }

private:
  const ReferenceProgram &program;
  c10::Device device;
  std::vector<at::Tensor> values;

  static std::string firstLine(const std::string &text) {
    return text.substr(0, text.find('\n'));
  }

  at::TensorOptions options(DType dtype) const {
    return at::TensorOptions().dtype(toScalarType(dtype)).device(device);
  }

  const std::vector<int64_t> &ints(const RefOp &op, const char *name) const {
    return op.ints.at(name); // validate() made sure it exists
  }

  int64_t single(const RefOp &op, const char *name) const {
    const auto &v = ints(op, name);
    if (v.size() != 1)
      throw OpError{std::string("attribute '") + name +
                    "' must hold one integer"};
    return v[0];
  }

  /// Spatial attributes of conv/pool: one entry per spatial dim of `x`.
  const std::vector<int64_t> &spatial(const RefOp &op, const char *name,
                                      const at::Tensor &x) const {
    const auto &v = ints(op, name);
    if (x.dim() < 3 || x.dim() > 5 ||
        static_cast<int64_t>(v.size()) != x.dim() - 2)
      throw OpError{std::string("attribute '") + name +
                    "' needs one entry per "
                    "spatial dim of a 3-d to 5-d input, which is " +
                    typeString(x)};
    return v;
  }

  Operand operand(const RefOp &op, size_t index) const {
    int id = op.args[index];
    if (isLiteralOperand(program, op, index)) {
      const RefOp &s = program.ops[id - program.inputs.size()];
      return {at::Tensor(), numberOf(s.value, s.type.dtype)};
    }
    return {values[id], std::nullopt};
  }

  const at::Tensor &arg(const RefOp &op, size_t index) const {
    return values[op.args[index]];
  }

  /// `a[o0:e0:s0, o1:e1:s1, ...]`, a view, as the printer's slice spelling.
  at::Tensor sliceView(const RefOp &op, at::Tensor a) const {
    const auto &offsets = ints(op, "offsets"), &sizes = ints(op, "sizes"),
               &strides = ints(op, "strides");
    if (sizes.size() != offsets.size() || strides.size() != offsets.size() ||
        static_cast<int64_t>(offsets.size()) > a.dim())
      throw OpError{"offsets, sizes and strides need one entry per sliced dim "
                    "of " +
                    typeString(a)};
    for (size_t d = 0; d < offsets.size(); ++d) {
      if (strides[d] < 1 || sizes[d] < 1)
        throw OpError{"sizes and strides must be positive"};
      int64_t end = offsets[d] + (sizes[d] - 1) * strides[d] + 1;
      a = a.slice(static_cast<int64_t>(d), offsets[d], end, strides[d]);
    }
    return a;
  }

  at::Tensor apply(const RefOp &op) const {
    switch (op.fn) {
#define DICE_REF_UNARY(Enum, Name, Torch, Aten)                                            \
  case RefFn::Enum:                                                                        \
    return at::Aten(arg(op, 0));
#define DICE_REF_BINARY(Enum, Name, Torch, Aten, Numbers)                                  \
  case RefFn::Enum:                                                                        \
    return binary<RefNumbers::Numbers>(operand(op, 0), operand(op, 1),                    \
                                       [](const auto &a, const auto &b) { return at::Aten(a, b); });
#include "dice/Reference/RefOps.def"
    case RefFn::Scalar:
      return at::scalar_tensor(numberOf(op.value, op.type.dtype), options(op.type.dtype));
    case RefFn::Full:
      return at::full(op.type.shape, numberOf(op.value, op.type.dtype),
                      options(op.type.dtype));
    case RefFn::DimSize: {
      at::Tensor a = arg(op, 0);
      int64_t dim = single(op, "dim");
      if (dim < 0 || dim >= a.dim())
        throw OpError{"dim is not a dimension of its argument"};
      return at::scalar_tensor(a.size(dim), options(DType::Int64));
    }
    case RefFn::Arange: {
      int64_t dim = single(op, "dim");
      if (dim < 0 || dim >= static_cast<int64_t>(op.type.shape.size()))
        throw OpError{"dim is not a dimension of the result"};
      return at::arange(op.type.shape[dim], options(DType::Int64)).reshape(op.type.shape);
    }
    case RefFn::DivTrunc:
      return at::div(arg(op, 0), arg(op, 1), "trunc");
    case RefFn::DivFloor:
      return at::div(arg(op, 0), arg(op, 1), "floor");
    case RefFn::Where: {
      Operand a = operand(op, 1), b = operand(op, 2);
      const at::Tensor &cond = arg(op, 0);
      if (a.number && b.number)
        return at::where(cond, *a.number, *b.number);
      if (a.number)
        return at::where(cond, *a.number, b.tensor);
      if (b.number)
        return at::where(cond, a.tensor, *b.number);
      return at::where(cond, a.tensor, b.tensor);
    }
    case RefFn::To:
      return arg(op, 0).to(toScalarType(op.type.dtype));
    case RefFn::Permute:
      return arg(op, 0).permute(ints(op, "dims"));
    case RefFn::Reshape:
      return arg(op, 0).reshape(op.type.shape);
    case RefFn::Expand:
      return arg(op, 0).expand(op.type.shape);
    case RefFn::Slice:
      return sliceView(op, arg(op, 0));
    case RefFn::InsertSlice: {
      at::Tensor result = arg(op, 1).clone();
      at::Tensor window = sliceView(op, result);
      window.copy_(arg(op, 0).reshape(window.sizes()));
      return result;
    }
    case RefFn::Pad:
      return pad(op);
    case RefFn::Cat: {
      std::vector<at::Tensor> parts;
      for (size_t i = 0; i < op.args.size(); ++i)
        parts.push_back(arg(op, i));
      return at::cat(parts, single(op, "dim"));
    }
    case RefFn::Sum:
      return at::sum(arg(op, 0), ints(op, "dims"));
    case RefFn::Amax:
      return at::amax(arg(op, 0), ints(op, "dims"));
    case RefFn::Amin:
      return at::amin(arg(op, 0), ints(op, "dims"));
    case RefFn::Prod: {
      // One dim at a time, in reverse order, as the printer spells it.
      at::Tensor a = arg(op, 0);
      const auto &dims = ints(op, "dims");
      for (auto d = dims.rbegin(); d != dims.rend(); ++d)
        a = at::prod(a, *d);
      return a;
    }
    case RefFn::Argmax:
      return at::argmax(arg(op, 0), ints(op, "dim")[0]);
    case RefFn::Argmin:
      return at::argmin(arg(op, 0), ints(op, "dim")[0]);
    case RefFn::Logsumexp:
      return at::logsumexp(arg(op, 0), ints(op, "dims"));
    case RefFn::Matmul:
      return at::matmul(arg(op, 0), arg(op, 1));
    case RefFn::Conv:
      return conv(op);
    case RefFn::MaxPool:
      return maxPool(op);
    case RefFn::SumPool:
      return sumPool(op);
    case RefFn::Index: {
      c10::List<std::optional<at::Tensor>> indices;
      for (size_t i = 1; i < op.args.size(); ++i)
        indices.push_back(arg(op, i));
      return at::index(arg(op, 0), indices);
    }
    case RefFn::IndexPut: {
      // Column j of the indices indexes dimension j.
      c10::List<std::optional<at::Tensor>> positions;
      for (const at::Tensor &column : arg(op, 1).to(at::kLong).unbind(1))
        positions.push_back(column);
      return at::index_put(arg(op, 0), positions, arg(op, 2),
                           single(op, "accumulate") != 0);
    }
    case RefFn::IndexReduce:
      return at::index_reduce(
          arg(op, 0), 0, arg(op, 1), arg(op, 2),
          indexReductionName(static_cast<IndexReduction>(single(op, "reduce"))),
          /*include_self=*/true);
    case RefFn::Argsort:
      return at::argsort(arg(op, 0), /*stable=*/true, single(op, "dim"),
                         single(op, "descending") != 0);
    case RefFn::Cumsum:
      return at::cumsum(arg(op, 0), single(op, "dim"), toScalarType(op.type.dtype));
    case RefFn::Cumprod:
      return at::cumprod(arg(op, 0), single(op, "dim"), toScalarType(op.type.dtype));
    case RefFn::Silu:
      return at::silu(arg(op, 0));
    case RefFn::Gelu:
      return at::gelu(arg(op, 0));
    case RefFn::GeluTanh:
      return at::gelu(arg(op, 0), "tanh");
    case RefFn::Softplus:
      return at::softplus(arg(op, 0), /*beta=*/1, /*threshold=*/op.value);
    case RefFn::Mish:
      return at::mish(arg(op, 0));
    case RefFn::Hardsigmoid:
      return at::hardsigmoid(arg(op, 0));
    case RefFn::Hardswish:
      return at::hardswish(arg(op, 0));
    case RefFn::LeakyRelu:
      return at::leaky_relu(arg(op, 0), op.value);
    case RefFn::Elu:
      return at::elu(arg(op, 0), op.value);
    case RefFn::Selu:
      return at::selu(arg(op, 0));
    case RefFn::Celu:
      return at::celu(arg(op, 0), op.value);
    case RefFn::Relu6:
      return at::relu6(arg(op, 0));
    case RefFn::Logsigmoid:
      return at::log_sigmoid(arg(op, 0));
    case RefFn::Softmax:
      return at::softmax(arg(op, 0), single(op, "dim"));
    case RefFn::LogSoftmax:
      return at::log_softmax(arg(op, 0), single(op, "dim"));
    case RefFn::LayerNorm:
    case RefFn::RmsNorm:
      return norm(op);
    case RefFn::GroupNorm: {
      const at::Tensor &x = arg(op, 0);
      return at::group_norm(x, single(op, "groups"), arg(op, 1).reshape({x.size(1)}),
                            arg(op, 2).reshape({x.size(1)}), op.value);
    }
    }
    throw OpError{"unknown operation"}; // not reached: the switch is exhaustive
  }

  /// F.layer_norm / F.rms_norm over the input's trailing `normalized` dims.
  at::Tensor norm(const RefOp &op) const {
    const at::Tensor &x = arg(op, 0);
    int64_t k = single(op, "normalized");
    const auto &affine = ints(op, "affine");
    if (k < 1 || k > x.dim() || affine.size() != 2)
      throw OpError{"normalized and affine do not fit " + typeString(x)};
    size_t next = 1;
    auto param = [&](int64_t present) -> std::optional<at::Tensor> {
      if (!present)
        return std::nullopt;
      if (next >= op.args.size())
        throw OpError{"an affine parameter is missing"};
      return arg(op, next++);
    };
    at::IntArrayRef shape = x.sizes().slice(x.dim() - k);
    std::optional<at::Tensor> weight = param(affine[0]);
    if (op.fn == RefFn::RmsNorm)
      return at::rms_norm(x, shape, weight, op.value);
    std::optional<at::Tensor> bias = param(affine[1]);
    return at::layer_norm(x, shape, weight, bias, op.value);
  }

  at::Tensor conv(const RefOp &op) const {
    const at::Tensor &x = arg(op, 0), &w = arg(op, 1);
    const auto &s = spatial(op, "stride", x), &p = spatial(op, "padding", x),
               &d = spatial(op, "dilation", x);
    int64_t groups = single(op, "groups");
    switch (s.size()) {
    case 1:
      return at::conv1d(x, w, std::nullopt, s, p, d, groups);
    case 2:
      return at::conv2d(x, w, std::nullopt, s, p, d, groups);
    default:
      return at::conv3d(x, w, std::nullopt, s, p, d, groups);
    }
  }

  at::Tensor maxPool(const RefOp &op) const {
    const at::Tensor &x = arg(op, 0);
    const auto &k = spatial(op, "kernel", x), &s = spatial(op, "stride", x),
               &p = spatial(op, "padding", x), &d = spatial(op, "dilation", x);
    switch (k.size()) {
    case 1:
      return at::max_pool1d(x, k, s, p, d);
    case 2:
      return at::max_pool2d(x, k, s, p, d);
    default:
      return at::max_pool3d(x, k, s, p, d);
    }
  }

  /// avg_pool with the divisor fixed at 1; avg_pool1d has no divisor
  /// override, so its average is multiplied back (as the printer does).
  at::Tensor sumPool(const RefOp &op) const {
    const at::Tensor &x = arg(op, 0);
    const auto &k = spatial(op, "kernel", x), &s = spatial(op, "stride", x),
               &p = spatial(op, "padding", x);
    switch (k.size()) {
    case 1:
      return at::mul(at::avg_pool1d(x, k, s, p),
                     at::native::wrapped_scalar_tensor(at::Scalar(k[0])));
    case 2:
      return at::avg_pool2d(x, k, s, p, /*ceil_mode=*/false,
                            /*count_include_pad=*/true, /*divisor_override=*/1);
    default:
      return at::avg_pool3d(x, k, s, p, /*ceil_mode=*/false,
                            /*count_include_pad=*/true, /*divisor_override=*/1);
    }
  }

  /// F.pad's list runs (low, high) from the last padded dim backwards.
  at::Tensor pad(const RefOp &op) const {
    const at::Tensor &a = arg(op, 0);
    const auto &low = ints(op, "low"), &high = ints(op, "high");
    if (low.size() != high.size() || static_cast<int64_t>(low.size()) > a.dim())
      throw OpError{"low and high need one entry per padded dim of " +
                    typeString(a)};
    std::vector<int64_t> pairs;
    for (size_t d = low.size(); d-- > 0;) {
      pairs.push_back(low[d]);
      pairs.push_back(high[d]);
    }
    return at::constant_pad_nd(a, pairs, numberOf(op.value, op.type.dtype));
  }
};

} // namespace

c10::ScalarType toScalarType(DType dtype) {
  switch (dtype) {
  case DType::Float32:
    return at::kFloat;
  case DType::Float16:
    return at::kHalf;
  case DType::BFloat16:
    return at::kBFloat16;
  case DType::Float64:
    return at::kDouble;
  case DType::Int64:
    return at::kLong;
  case DType::Int32:
    return at::kInt;
  case DType::Int16:
    return at::kShort;
  case DType::Int8:
    return at::kChar;
  case DType::UInt8:
    return at::kByte;
  case DType::Bool:
    return at::kBool;
  }
  return at::kFloat;
}

std::optional<DType> fromScalarType(c10::ScalarType type) {
  for (DType d : {DType::Float32, DType::Float16, DType::BFloat16,
                  DType::Float64, DType::Int64, DType::Int32, DType::Int16,
                  DType::Int8, DType::UInt8, DType::Bool})
    if (toScalarType(d) == type)
      return d;
  return std::nullopt;
}

static Result<ReferenceProgram> specializeFor(const ReferenceProgram &program,
                                       const std::vector<at::Tensor> &inputs) {
  if (program.isStatic())
    return program;
  std::vector<std::vector<int64_t>> shapes;
  for (const at::Tensor &input : inputs)
    shapes.push_back(input.defined() ? input.sizes().vec() : std::vector<int64_t>{});
  Result<std::vector<int64_t>> sizes = program.bindSizes(shapes);
  if (!sizes)
    return sizes.error();
  return program.specialize(*sizes);
}

std::string checkReferenceInputs(const ReferenceProgram &symbolic,
                                 const std::vector<at::Tensor> &inputs) {
  if (inputs.size() != symbolic.inputs.size())
    return "the program takes " + std::to_string(symbolic.inputs.size()) +
           " inputs, got " + std::to_string(inputs.size());
  Result<ReferenceProgram> specialized = specializeFor(symbolic, inputs);
  if (!specialized)
    return specialized.error().message;
  const ReferenceProgram &program = *specialized;
  if (inputs.size() != program.inputs.size())
    return "the program takes " + std::to_string(program.inputs.size()) +
           " inputs, got " + std::to_string(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string name = "input " + std::to_string(i);
    if (!inputs[i].defined())
      return name + " is an undefined tensor";
    const TensorType &want = program.inputs[i];
    if (inputs[i].sizes() != at::IntArrayRef(want.shape) ||
        inputs[i].scalar_type() != toScalarType(want.dtype))
      return name + " is " + typeString(inputs[i]) + ", the program expects " +
             typeString(want);
    if (inputs[i].device() != inputs[0].device())
      return name + " is on " + inputs[i].device().str() + ", input 0 on " +
             inputs[0].device().str();
  }
  return "";
}

ReferenceRun runReferenceProgram(const ReferenceProgram &symbolic,
                                 const std::vector<at::Tensor> &inputs,
                                 std::optional<c10::Device> device) {
  ReferenceRun run;
  run.error = symbolic.validate();
  if (run.error.empty())
    run.error = checkReferenceInputs(symbolic, inputs);
  if (!run.ok())
    return run;
  // The sizes of a dynamic program are bound from the inputs at hand.
  const ReferenceProgram program = *specializeFor(symbolic, inputs);
  c10::Device target = device.value_or(c10::Device(c10::kCPU));
  if (!inputs.empty()) {
    // "cuda" (no index) names whichever GPU the inputs are on.
    c10::Device actual = inputs[0].device();
    if (device &&
        (device->type() != actual.type() ||
         (device->has_index() && device->index() != actual.index()))) {
      run.error = "the inputs are on " + actual.str() +
                  ", the constants were asked for on " + device->str();
      return run;
    }
    target = actual;
  }
  run.error = Executor(program, target).run(inputs, run.outputs);
  if (!run.ok())
    run.outputs.clear();
  return run;
}

} // namespace dice
