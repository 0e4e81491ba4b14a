//===- ReferenceProgram.cpp - the reference program and its JSON ----------===//

#include "dice/Scaffold/ReferenceProgram.h"

#include "dice/Runtime/DiceRuntime.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <set>

namespace dice {
namespace {

struct DTypeInfo {
  DType dtype;
  const char *name;
};
constexpr std::array<DTypeInfo, 10> kDTypes = {{
    {DType::Float32, "float32"},
    {DType::Float16, "float16"},
    {DType::BFloat16, "bfloat16"},
    {DType::Float64, "float64"},
    {DType::Int64, "int64"},
    {DType::Int32, "int32"},
    {DType::Int16, "int16"},
    {DType::Int8, "int8"},
    {DType::UInt8, "uint8"},
    {DType::Bool, "bool"},
}};

/// How many arguments an op takes and which integer attributes it needs.
struct Signature {
  int minArgs, maxArgs; ///< maxArgs < 0: unbounded
  std::vector<const char *> ints;
};

const std::map<std::string, Signature> &vocabulary() {
  static const std::map<std::string, Signature> table = [] {
    std::map<std::string, Signature> t;
    t["scalar"] = {0, 0, {}};
    t["full"] = {0, 0, {}};
    for (const char *fn : {"add", "sub", "mul", "div", "maximum", "minimum",
                           "pow", "atan2", "remainder", "gt", "ge", "lt", "le",
                           "eq", "ne", "logical_and", "logical_or"})
      t[fn] = {2, 2, {}};
    for (const char *fn :
         {"neg", "exp", "exp2", "log", "log1p", "expm1", "tanh", "sqrt",
          "rsqrt", "erf", "abs", "sin", "cos", "tan", "floor", "ceil", "round",
          "trunc", "sigmoid", "logical_not", "bitwise_not", "reciprocal", "to"})
      t[fn] = {1, 1, {}};
    t["where"] = {3, 3, {}};
    t["permute"] = {1, 1, {"dims"}};
    t["reshape"] = {1, 1, {}};
    t["expand"] = {1, 1, {}};
    for (const char *fn : {"sum", "amax", "amin", "prod"})
      t[fn] = {1, 1, {"dims"}};
    t["matmul"] = {2, 2, {}};
    t["conv"] = {2, 2, {"stride", "padding", "dilation", "groups"}};
    t["max_pool"] = {1, 1, {"kernel", "stride", "padding", "dilation"}};
    t["sum_pool"] = {1, 1, {"kernel", "stride", "padding"}};
    t["pad"] = {1, 1, {"low", "high"}};
    t["slice"] = {1, 1, {"offsets", "sizes", "strides"}};
    t["insert_slice"] = {2, 2, {"offsets", "sizes", "strides"}};
    t["cat"] = {1, -1, {"dim"}};
    return t;
  }();
  return table;
}

nlohmann::json typeToJson(const TensorType &type) {
  return {{"shape", type.shape}, {"dtype", dtypeName(type.dtype)}};
}

bool typeFromJson(const nlohmann::json &j, TensorType &type, std::string &error) {
  if (!j.is_object() || !j.contains("shape") || !j.contains("dtype") ||
      !j["shape"].is_array() || !j["dtype"].is_string()) {
    error = "a tensor type needs 'shape' (array) and 'dtype' (string)";
    return false;
  }
  for (const auto &d : j["shape"]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) {
      error = "shape entries must be non-negative integers";
      return false;
    }
    type.shape.push_back(d.get<int64_t>());
  }
  auto dtype = parseDType(j["dtype"].get<std::string>());
  if (!dtype) {
    error = "unknown dtype '" + j["dtype"].get<std::string>() + "'";
    return false;
  }
  type.dtype = *dtype;
  return true;
}

} // namespace

// The runtime's C ABI (DiceDType) numbers dtypes as DType orders them: the
// trampolines dice-lower writes pass static_cast<int>(DType) as a DiceDType.
static_assert(static_cast<int>(DType::Float32) == DICE_DTYPE_FLOAT32 &&
              static_cast<int>(DType::Float16) == DICE_DTYPE_FLOAT16 &&
              static_cast<int>(DType::BFloat16) == DICE_DTYPE_BFLOAT16 &&
              static_cast<int>(DType::Float64) == DICE_DTYPE_FLOAT64 &&
              static_cast<int>(DType::Int64) == DICE_DTYPE_INT64 &&
              static_cast<int>(DType::Int32) == DICE_DTYPE_INT32 &&
              static_cast<int>(DType::Int16) == DICE_DTYPE_INT16 &&
              static_cast<int>(DType::Int8) == DICE_DTYPE_INT8 &&
              static_cast<int>(DType::UInt8) == DICE_DTYPE_UINT8 &&
              static_cast<int>(DType::Bool) == DICE_DTYPE_BOOL,
              "DType and DiceDType must number dtypes alike");

const char *dtypeName(DType dtype) {
  for (const DTypeInfo &info : kDTypes)
    if (info.dtype == dtype)
      return info.name;
  return "?";
}

std::optional<DType> parseDType(const std::string &name) {
  for (const DTypeInfo &info : kDTypes)
    if (name == info.name)
      return info.dtype;
  return std::nullopt;
}

bool isFloatingPoint(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float16 ||
         dtype == DType::BFloat16 || dtype == DType::Float64;
}

std::string formatFloat(double value) {
  char buffer[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  std::string text(buffer);
  // `2` would read back as an integer.
  if (text.find_first_of(".eEn") == std::string::npos)
    text += ".0";
  return text;
}

int64_t TensorType::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

const TensorType &ReferenceProgram::typeOf(int id) const {
  if (id < static_cast<int>(inputs.size()))
    return inputs[id];
  return ops[id - inputs.size()].type;
}

int ReferenceProgram::add(RefOp op) {
  ops.push_back(std::move(op));
  return static_cast<int>(inputs.size() + ops.size() - 1);
}

std::string ReferenceProgram::toJson() const {
  nlohmann::json j;
  j["inputs"] = nlohmann::json::array();
  for (const TensorType &t : inputs)
    j["inputs"].push_back(typeToJson(t));
  j["ops"] = nlohmann::json::array();
  for (const RefOp &op : ops) {
    nlohmann::json o = {{"fn", op.fn}, {"args", op.args}, {"type", typeToJson(op.type)}};
    if (!op.ints.empty())
      o["ints"] = op.ints;
    if (op.value != 0)
      o["value"] = op.value;
    j["ops"].push_back(std::move(o));
  }
  j["outputs"] = outputs;
  return j.dump();
}

std::optional<ReferenceProgram>
ReferenceProgram::fromJson(const std::string &text, std::string &error) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    error = "not a JSON object";
    return std::nullopt;
  }
  for (const char *key : {"inputs", "ops", "outputs"})
    if (!j.contains(key) || !j[key].is_array()) {
      error = std::string("missing array '") + key + "'";
      return std::nullopt;
    }
  ReferenceProgram program;
  for (const auto &t : j["inputs"]) {
    TensorType type;
    if (!typeFromJson(t, type, error))
      return std::nullopt;
    program.inputs.push_back(type);
  }
  for (const auto &o : j["ops"]) {
    RefOp op;
    if (!o.is_object() || !o.contains("fn") || !o["fn"].is_string() ||
        !o.contains("args") || !o["args"].is_array() || !o.contains("type")) {
      error = "op " + std::to_string(program.ops.size()) +
              " needs 'fn', 'args' and 'type'";
      return std::nullopt;
    }
    op.fn = o["fn"].get<std::string>();
    for (const auto &a : o["args"]) {
      if (!a.is_number_integer()) {
        error = "op '" + op.fn + "': arguments must be value numbers";
        return std::nullopt;
      }
      op.args.push_back(a.get<int>());
    }
    if (o.contains("ints")) {
      if (!o["ints"].is_object()) {
        error = "op '" + op.fn + "': 'ints' must be an object";
        return std::nullopt;
      }
      for (const auto &[name, values] : o["ints"].items()) {
        if (!values.is_array()) {
          error = "op '" + op.fn + "': attribute '" + name + "' must be an array";
          return std::nullopt;
        }
        for (const auto &v : values) {
          if (!v.is_number_integer()) {
            error = "op '" + op.fn + "': attribute '" + name + "' must hold integers";
            return std::nullopt;
          }
          op.ints[name].push_back(v.get<int64_t>());
        }
      }
    }
    if (o.contains("value")) {
      if (!o["value"].is_number()) {
        error = "op '" + op.fn + "': 'value' must be a number";
        return std::nullopt;
      }
      op.value = o["value"].get<double>();
    }
    if (!typeFromJson(o["type"], op.type, error))
      return std::nullopt;
    program.ops.push_back(std::move(op));
  }
  for (const auto &v : j["outputs"]) {
    if (!v.is_number_integer()) {
      error = "outputs must be value numbers";
      return std::nullopt;
    }
    program.outputs.push_back(v.get<int>());
  }
  error = program.validate();
  if (!error.empty())
    return std::nullopt;
  return program;
}

std::string ReferenceProgram::validate() const {
  const auto &vocab = vocabulary();
  for (size_t i = 0; i < ops.size(); ++i) {
    const RefOp &op = ops[i];
    std::string where = "op " + std::to_string(i) + " ('" + op.fn + "')";
    auto it = vocab.find(op.fn);
    if (it == vocab.end())
      return where + ": unknown operation";
    const Signature &sig = it->second;
    int n = static_cast<int>(op.args.size());
    if (n < sig.minArgs || (sig.maxArgs >= 0 && n > sig.maxArgs))
      return where + ": wrong number of arguments (" + std::to_string(n) + ")";
    int self = static_cast<int>(inputs.size() + i);
    for (int a : op.args)
      if (a < 0 || a >= self)
        return where + ": argument " + std::to_string(a) +
               " is not defined before it";
    for (const char *name : sig.ints)
      if (!op.ints.count(name))
        return where + ": missing attribute '" + name + "'";
  }
  int count = static_cast<int>(inputs.size() + ops.size());
  if (outputs.empty())
    return "the program returns nothing";
  for (int v : outputs)
    if (v < 0 || v >= count)
      return "output " + std::to_string(v) + " is not a value of the program";
  return "";
}

} // namespace dice
