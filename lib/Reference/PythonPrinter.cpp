//===- PythonPrinter.cpp - reference program -> KernelBench Python --------===//
//
// The program the DICE model reads: KernelBench's format, so that published
// DICE weights see what they were trained on. Every op prints as the torch
// call with exactly the semantics that AtenExecutor.cpp implements.
//
//===----------------------------------------------------------------------===//

#include "dice/Reference/ReferenceOperands.h"
#include "dice/Reference/ReferenceProgram.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>

namespace dice {
namespace {

/// Shortest spelling that reads back as the same double, as Python's repr.
std::string pythonFloat(double v) {
  if (std::isnan(v))
    return "float('nan')";
  if (std::isinf(v))
    return v > 0 ? "float('inf')" : "float('-inf')";
  return formatFloat(v);
}

std::string literal(double v, DType dtype) {
  if (dtype == DType::Bool)
    return v != 0 ? "True" : "False";
  if (!isFloatingPoint(dtype))
    return std::to_string(static_cast<int64_t>(v));
  return pythonFloat(v);
}

/// A Python tuple of `values`, each spelled by `spell`.
template <typename Spell>
std::string tupleOf(const std::vector<int64_t> &values, Spell spell) {
  std::string s = "(";
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? ", " : "") + spell(values[i]);
  return s + (values.size() == 1 ? ",)" : ")");
}

std::string tuple(const std::vector<int64_t> &values) {
  return tupleOf(values, [](int64_t v) { return std::to_string(v); });
}

std::string torchDType(DType dtype) {
  return std::string("torch.") + dtypeName(dtype);
}

class Printer {
public:
  explicit Printer(const ReferenceProgram &program) : program(program) {
    // A scalar prints inline where an elementwise op uses it; anywhere else
    // (a view, a reduction, an output) it needs a name of its own.
    for (const RefOp &op : program.ops)
      if (!isElementwise(op.fn))
        for (int a : op.args)
          if (isScalar(a))
            namedScalars.insert(a);
    for (int v : program.outputs)
      if (isScalar(v))
        namedScalars.insert(v);
  }

  /// A size of the forward pass: a number, or the input dimension a size
  /// symbol is read from (`x0.shape[0]`, times its factor for a derived one).
  std::string size(int64_t value) const {
    if (!isSymbolicSize(value))
      return std::to_string(value);
    const SizeSymbol &symbol = program.symbols.at(symbolOfSize(value));
    if (symbol.base >= 0)
      return size(symbolicSize(symbol.base)) + " * " + std::to_string(symbol.factor);
    for (size_t i = 0; i < program.inputs.size(); ++i)
      for (size_t d = 0; d < program.inputs[i].shape.size(); ++d)
        if (program.inputs[i].shape[d] == value)
          return name(i) + ".shape[" + std::to_string(d) + "]";
    // Held only as a multiple (a flattened batch): divided back.
    for (size_t i = 0; i < program.inputs.size(); ++i)
      for (size_t d = 0; d < program.inputs[i].shape.size(); ++d) {
        int64_t held = program.inputs[i].shape[d];
        if (isSymbolicSize(held) &&
            program.symbols.at(symbolOfSize(held)).base == symbolOfSize(value))
          return "(" + name(i) + ".shape[" + std::to_string(d) + "] // " +
                 std::to_string(program.symbols.at(symbolOfSize(held)).factor) + ")";
      }
    return "None  # unbound size"; // validate() rejects such programs
  }

  std::string shape(const std::vector<int64_t> &values) const {
    return tupleOf(values, [&](int64_t v) { return size(v); });
  }

  /// The argument list of `.reshape`/`.expand`: the sizes themselves, or for
  /// a 0-d result the empty tuple (`.reshape()` takes no shape at all).
  std::string shapeArgs(const std::vector<int64_t> &values) const {
    return values.empty() ? "(())" : shape(values);
  }

  std::string print() {
    std::ostringstream os;
    os << "import torch\nimport torch.nn as nn\n\n\n"
       << "class Model(nn.Module):\n"
       << "    def __init__(self):\n"
       << "        super().__init__()\n\n"
       << "    def forward(self";
    for (size_t i = 0; i < program.inputs.size(); ++i)
      os << ", " << name(i);
    os << "):\n";
    for (size_t i = 0; i < program.ops.size(); ++i)
      printOp(os, program.ops[i], program.inputs.size() + i);
    os << "        return ";
    for (size_t i = 0; i < program.outputs.size(); ++i)
      os << (i ? ", " : "") << name(program.outputs[i]);
    os << "\n\n\ndef get_inputs():\n    return [";
    // Inputs at the example sizes; the forward pass reads the actual ones.
    std::vector<int64_t> examples = program.exampleSizes();
    std::vector<int64_t> indexBounds = program.indexBounds();
    for (size_t i = 0; i < program.inputs.size(); ++i) {
      TensorType type = program.inputs[i];
      for (int64_t &d : type.shape)
        if (isSymbolicSize(d))
          d = examples.at(symbolOfSize(d));
      os << (i ? ", " : "") << randomInput(type, indexBounds[i]);
    }
    os << "]\n\n\ndef get_init_inputs():\n    return []\n";
    return os.str();
  }

private:
  const ReferenceProgram &program;
  std::set<int> namedScalars;

  static bool isElementwise(RefFn fn) {
    return refFnInfo(fn).category == RefCategory::Elementwise;
  }

  /// Constants are made on the inputs' device, as the executor makes them.
  std::string device() const {
    return program.inputs.empty() ? "" : ", device=x0.device";
  }

  std::string scalarTensor(const RefOp &s) const {
    return "torch.tensor(" + literal(s.value, s.type.dtype) +
           ", dtype=" + torchDType(s.type.dtype) + device() + ")";
  }

  std::string name(size_t id) const {
    return (id < program.inputs.size() ? "x" : "t") + std::to_string(id);
  }

  /// `torch.<fn>` of value `id` over `dims`, for the torch reductions that
  /// take one dim at a time: nested, the highest dim first, which keeps the
  /// others' numbering.
  std::string oneDimAtATime(const std::string &fn, int id,
                            const std::vector<int64_t> &dims) const {
    std::string expr = name(id);
    for (auto d = dims.rbegin(); d != dims.rend(); ++d)
      expr = "torch." + fn + "(" + expr + ", dim=" + std::to_string(*d) + ")";
    return expr;
  }

  bool isScalar(int id) const { return isScalarValue(program, id); }

  /// A scalar operand prints as a Python number where isLiteralOperand says
  /// so, otherwise as a 0-d tensor (inline, or by name where it has one).
  std::string arg(const RefOp &op, size_t index) const {
    int id = op.args[index];
    if (!isScalar(id) || namedScalars.count(id))
      return name(id);
    const RefOp &s = program.ops[id - program.inputs.size()];
    if (isLiteralOperand(program, op, index))
      return literal(s.value, s.type.dtype);
    return scalarTensor(s);
  }

  /// `indexBound`: an input of indices draws in [0, indexBound).
  std::string randomInput(const TensorType &type, int64_t indexBound) const {
    std::string shape = tuple(type.shape);
    if (type.dtype == DType::Bool)
      return "torch.rand(" + shape + ") > 0.5";
    if (!isFloatingPoint(type.dtype))
      return "torch.randint(0, " + std::to_string(indexBound ? indexBound : 10) + ", " +
             shape + ", dtype=" + torchDType(type.dtype) + ")";
    return "torch.randn(" + shape + ", dtype=" + torchDType(type.dtype) + ")";
  }

  void printOp(std::ostream &os, const RefOp &op, size_t id) const {
    std::string out = "        " + name(id) + " = ";
    auto ints = [&](const char *key) { return op.ints.at(key); };
    switch (op.fn) {
#define DICE_REF_UNARY(Enum, Name, Torch, Aten)                                            \
  case RefFn::Enum:                                                                        \
    os << out << Torch << "(" << arg(op, 0) << ")\n";                                      \
    return;
#define DICE_REF_BINARY(Enum, Name, Torch, Aten, Numbers)                                  \
  case RefFn::Enum:                                                                        \
    os << out << Torch << "(" << arg(op, 0) << ", " << arg(op, 1) << ")\n";                \
    return;
#define DICE_REF_COMPOUND(Enum, Name, Call, After, Param, Default, Definition)             \
  case RefFn::Enum:                                                                        \
    printCompound(os, out, op, Call, After, Param, Default, Definition);                   \
    return;
#include "dice/Reference/RefOps.def"
    case RefFn::Scalar:
      if (namedScalars.count(static_cast<int>(id)))
        os << out << scalarTensor(op) << "\n";
      return; // otherwise printed inline where used
    case RefFn::Full:
      os << out << "torch.full(" << shape(op.type.shape) << ", "
         << literal(op.value, op.type.dtype) << ", dtype=" << torchDType(op.type.dtype)
         << device() << ")\n";
      return;
    case RefFn::Arange: {
      int64_t dim = ints("dim")[0];
      os << out << "torch.arange(" << size(op.type.shape.at(dim))
         << ", dtype=torch.int64" << device() << ").reshape"
         << shapeArgs(op.type.shape) << "\n";
      return;
    }
    case RefFn::DimSize:
      os << out << "torch.tensor(" << name(op.args[0]) << ".shape[" << ints("dim")[0]
         << "], dtype=torch.int64" << device() << ")\n";
      return;
    case RefFn::DivTrunc:
    case RefFn::DivFloor:
      os << out << "torch.div(" << arg(op, 0) << ", " << arg(op, 1) << ", rounding_mode='"
         << (op.fn == RefFn::DivTrunc ? "trunc" : "floor") << "')\n";
      return;
    case RefFn::Where:
      os << out << "torch.where(" << arg(op, 0) << ", " << arg(op, 1) << ", "
         << arg(op, 2) << ")\n";
      return;
    case RefFn::To:
      os << out << arg(op, 0) << ".to(" << torchDType(op.type.dtype) << ")\n";
      return;
    case RefFn::Permute:
      os << out << name(op.args[0]) << ".permute" << tuple(ints("dims")) << "\n";
      return;
    case RefFn::Reshape:
      os << out << name(op.args[0]) << ".reshape" << shapeArgs(op.type.shape) << "\n";
      return;
    case RefFn::Expand:
      os << out << name(op.args[0]) << ".expand" << shapeArgs(op.type.shape) << "\n";
      return;
    case RefFn::Slice:
      os << out << name(op.args[0]) << "[" << slices(op) << "]\n";
      return;
    case RefFn::InsertSlice:
      os << out << name(op.args[1]) << ".clone()\n";
      os << "        " << name(id) << "[" << slices(op) << "] = " << name(op.args[0])
         << ".reshape(" << name(id) << "[" << slices(op) << "].shape)\n";
      return;
    case RefFn::Pad: {
      // F.pad lists (low, high) pairs from the last dimension backwards.
      std::vector<int64_t> pairs;
      const auto &low = ints("low"), &high = ints("high");
      for (size_t d = low.size(); d-- > 0;) {
        pairs.push_back(low[d]);
        pairs.push_back(high[d]);
      }
      os << out << "torch.nn.functional.pad(" << name(op.args[0]) << ", " << tuple(pairs)
         << ", value=" << literal(op.value, op.type.dtype) << ")\n";
      return;
    }
    case RefFn::Cat:
      os << out << "torch.cat([";
      for (size_t i = 0; i < op.args.size(); ++i)
        os << (i ? ", " : "") << name(op.args[i]);
      os << "], dim=" << ints("dim")[0] << ")\n";
      return;
    case RefFn::Sum:
    case RefFn::Amax:
    case RefFn::Amin:
      if (op.fn != RefFn::Sum && op.type.dtype == DType::Bool) {
        // On booleans the largest is torch.any and the smallest torch.all,
        // which torch-mlir lowers back to the `or` and `and` reductions that
        // gave them (its amax of booleans is another lowering).
        os << out
           << oneDimAtATime(op.fn == RefFn::Amax ? "any" : "all", op.args[0], ints("dims"))
           << "\n";
        return;
      }
      os << out << "torch." << refFnName(op.fn) << "(" << name(op.args[0])
         << ", dim=" << tuple(ints("dims")) << ")\n";
      return;
    case RefFn::Prod:
      os << out << oneDimAtATime("prod", op.args[0], ints("dims")) << "\n";
      return;
    case RefFn::Argmax:
    case RefFn::Argmin:
      os << out << "torch." << refFnName(op.fn) << "(" << name(op.args[0])
         << ", dim=" << ints("dim")[0] << ")\n";
      return;
    case RefFn::Logsumexp:
      os << out << "torch.logsumexp(" << name(op.args[0]) << ", dim=" << tuple(ints("dims"))
         << ")\n";
      return;
    case RefFn::Matmul:
      os << out << "torch.matmul(" << name(op.args[0]) << ", " << name(op.args[1])
         << ")\n";
      return;
    case RefFn::Conv: {
      size_t spatial = program.typeOf(op.args[0]).shape.size() - 2;
      os << out << "torch.nn.functional.conv" << spatial << "d(" << name(op.args[0])
         << ", " << name(op.args[1]) << ", stride=" << tuple(ints("stride"))
         << ", padding=" << tuple(ints("padding"))
         << ", dilation=" << tuple(ints("dilation"))
         << ", groups=" << ints("groups")[0] << ")\n";
      return;
    }
    case RefFn::MaxPool: {
      size_t spatial = ints("kernel").size();
      os << out << "torch.nn.functional.max_pool" << spatial << "d(" << name(op.args[0])
         << ", kernel_size=" << tuple(ints("kernel")) << ", stride=" << tuple(ints("stride"))
         << ", padding=" << tuple(ints("padding"))
         << ", dilation=" << tuple(ints("dilation")) << ")\n";
      return;
    }
    case RefFn::SumPool: {
      size_t spatial = ints("kernel").size();
      os << out << "torch.nn.functional.avg_pool" << spatial << "d(" << name(op.args[0])
         << ", kernel_size=" << tuple(ints("kernel")) << ", stride=" << tuple(ints("stride"))
         << ", padding=" << tuple(ints("padding"));
      // avg_pool1d has no divisor_override: undo its division instead.
      if (spatial == 1)
        os << ") * " << ints("kernel")[0] << "\n";
      else
        os << ", divisor_override=1)\n";
      return;
    }
    case RefFn::Index:
      os << out << name(op.args[0]) << "[";
      for (size_t i = 1; i < op.args.size(); ++i)
        os << (i > 1 ? ", " : "") << name(op.args[i]);
      os << "]\n";
      return;
    case RefFn::IndexPut:
      os << out << name(op.args[0]) << ".index_put(tuple(" << name(op.args[1])
         << ".long().unbind(1)), " << name(op.args[2])
         << ", accumulate=" << (ints("accumulate")[0] ? "True" : "False") << ")\n";
      return;
    case RefFn::IndexReduce:
      os << out << name(op.args[0]) << ".index_reduce(0, " << name(op.args[1]) << ", "
         << name(op.args[2]) << ", '"
         << indexReductionName(static_cast<IndexReduction>(ints("reduce")[0]))
         << "', include_self=True)\n";
      return;
    case RefFn::Argsort:
      // Stable: equal elements keep their order, as torch-mlir's sort does.
      os << out << "torch.argsort(" << name(op.args[0]) << ", dim=" << ints("dim")[0]
         << ", descending=" << (ints("descending")[0] ? "True" : "False")
         << ", stable=True)\n";
      return;
    case RefFn::Cumsum:
    case RefFn::Cumprod: {
      // The result's dtype where torch's default is another (it widens
      // integers to int64); left out where it is the same, as users write
      // it: torch-mlir lowers no cumprod that names its dtype.
      DType source = program.typeOf(op.args[0]).dtype;
      DType byDefault = isFloatingPoint(source) ? source : DType::Int64;
      os << out << "torch." << refFnName(op.fn) << "(" << name(op.args[0])
         << ", dim=" << ints("dim")[0];
      if (op.type.dtype != byDefault)
        os << ", dtype=" << torchDType(op.type.dtype);
      os << ")\n";
      return;
    }
    case RefFn::Softmax:
    case RefFn::LogSoftmax:
      os << out << "torch." << refFnName(op.fn) << "(" << name(op.args[0])
         << ", dim=" << ints("dim")[0] << ")\n";
      return;
    case RefFn::LayerNorm:
    case RefFn::RmsNorm:
      printNorm(os, out, op);
      return;
    case RefFn::GroupNorm: {
      // The parameters as nn.GroupNorm holds them: one value per channel.
      int64_t channels = program.typeOf(op.args[0]).shape.at(1);
      auto perChannel = [&](int v) {
        return program.typeOf(v).shape == std::vector<int64_t>{channels}
                   ? name(v)
                   : name(v) + ".reshape(" + std::to_string(channels) + ")";
      };
      os << out << "torch.nn.functional.group_norm(" << name(op.args[0]) << ", "
         << ints("groups")[0] << ", " << perChannel(op.args[1]) << ", "
         << perChannel(op.args[2]) << ", eps=" << pythonFloat(op.value) << ")\n";
      return;
    }
    }
  }

  /// F.<call>(x<after>[, <param>=value]), the definition beside it: the call
  /// alone hides the math a kernel has to write (F.mish), so the printed
  /// program carries it, in elementary functions of X and the parameter A,
  /// as the call's comment. The parameter is spelled where it is not the
  /// default (a NaN default: always).
  void printCompound(std::ostream &os, const std::string &out, const RefOp &op,
                     const char *call, const char *after, const char *param,
                     double byDefault, const char *definition) const {
    std::string x = name(op.args[0]), a = pythonFloat(op.value);
    os << out << "torch.nn.functional." << call << "(" << x << after;
    if (*param && !(op.value == byDefault))
      os << ", " << param << "=" << a;
    os << ")  # ";
    for (const char *c = definition; *c; ++c)
      os << (*c == 'X' ? x : *c == 'A' ? a : std::string(1, *c));
    os << "\n";
  }

  /// F.layer_norm(x, shape, weight, bias, eps=...) and F.rms_norm(x, shape,
  /// weight, eps=...), the absent parameters as None.
  void printNorm(std::ostream &os, const std::string &out, const RefOp &op) const {
    const std::vector<int64_t> &x = program.typeOf(op.args[0]).shape;
    size_t k = static_cast<size_t>(op.ints.at("normalized")[0]);
    const std::vector<int64_t> &affine = op.ints.at("affine");
    size_t next = 1;
    auto param = [&](int64_t present) {
      return present ? name(op.args[next++]) : std::string("None");
    };
    os << out << "torch.nn.functional." << refFnName(op.fn) << "(" << name(op.args[0]) << ", "
       << shape(std::vector<int64_t>(x.end() - k, x.end())) << ", " << param(affine[0]);
    if (op.fn == RefFn::LayerNorm)
      os << ", " << param(affine[1]);
    os << ", eps=" << pythonFloat(op.value) << ")\n";
  }

  std::string slices(const RefOp &op) const {
    const auto &offsets = op.ints.at("offsets"), &sizes = op.ints.at("sizes"),
               &strides = op.ints.at("strides");
    std::string s;
    for (size_t d = 0; d < offsets.size(); ++d) {
      std::string end;
      if (!isSymbolicSize(sizes[d]))
        end = std::to_string(offsets[d] + (sizes[d] - 1) * strides[d] + 1);
      else if (strides[d] == 1)
        end = (offsets[d] ? std::to_string(offsets[d]) + " + " : "") + size(sizes[d]);
      else
        end = std::to_string(offsets[d]) + " + (" + size(sizes[d]) + " - 1) * " +
              std::to_string(strides[d]) + " + 1";
      s += (d ? ", " : "") + std::to_string(offsets[d]) + ":" + end;
      if (strides[d] != 1)
        s += ":" + std::to_string(strides[d]);
    }
    return s;
  }
};

} // namespace

bool isScalarValue(const ReferenceProgram &program, int id) {
  int n = static_cast<int>(program.inputs.size());
  return id >= n && id < n + static_cast<int>(program.ops.size()) &&
         program.ops[id - n].fn == RefFn::Scalar;
}

bool isLiteralOperand(const ReferenceProgram &program, const RefOp &op,
                      size_t index) {
  if (index >= op.args.size() || !isScalarValue(program, op.args[index]))
    return false;
  if (op.fn == RefFn::Where)
    return index > 0 && !isScalarValue(program, op.args[0]);
  if (op.args.size() != 2 || isScalarValue(program, op.args[1 - index]))
    return false;
  // Positions where torch's Python binding takes a number for a tensor.
  switch (refFnInfo(op.fn).numbers) {
  case RefNumbers::Tensors:
    return false;
  case RefNumbers::ScalarSecond:
    return index == 1;
  case RefNumbers::ScalarEither:
  case RefNumbers::Wrapped:
    return true;
  }
  return false;
}

std::string renderPythonModel(const ReferenceProgram &program) {
  return Printer(program).print();
}

} // namespace dice
