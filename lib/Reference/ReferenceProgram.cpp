//===- ReferenceProgram.cpp - the reference program and its JSON ----------===//

#include "dice/Reference/ReferenceProgram.h"
#include "dice/Support/JsonSyntaxError.h"
#include "dice/Support/NonFinite.h"

#include "dice/Runtime/DiceRuntime.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

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

using Json = nlohmann::json;

/// A size as JSON: a number, or "s<k>" for symbol k.
Json sizeToJson(int64_t size) {
  if (isSymbolicSize(size))
    return "s" + std::to_string(symbolOfSize(size));
  return size;
}

Json sizesToJson(const std::vector<int64_t> &sizes) {
  Json list = Json::array();
  for (int64_t size : sizes)
    list.push_back(sizeToJson(size));
  return list;
}

Json typeToJson(const TensorType &type) {
  return {{"shape", sizesToJson(type.shape)}, {"dtype", dtypeName(type.dtype)}};
}

/// "s<k>" as symbolicSize(k); nullopt for any other text.
std::optional<int64_t> symbolFromJson(const Json &j) {
  if (!j.is_string())
    return std::nullopt;
  const std::string &text = j.get_ref<const std::string &>();
  if (text.size() < 2 || text.size() > 8 || text[0] != 's' ||
      !std::all_of(text.begin() + 1, text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return symbolicSize(std::stoi(text.substr(1)));
}

/// A finite value as a JSON number (nlohmann writes the shortest digits
/// that read back exactly), any other as its string.
Json floatToJson(double value) {
  if (std::optional<std::string> text = floatToJsonString(value))
    return *text;
  return value;
}

Error fieldError(std::string key, std::string message) {
  Error error(std::move(message));
  error.key = std::move(key);
  return error;
}

Error syntaxError(std::string_view text) {
  JsonSyntaxError locator;
  Json::sax_parse(text, &locator);
  // "parse error at line 1, column 5: syntax error ...": the line and
  // column go to the Error's fields.
  std::string message = locator.message;
  if (message.starts_with("parse error"))
    if (size_t colon = message.find(": "); colon != std::string::npos)
      message.erase(0, colon + 2);
  Error error(message);
  size_t fault = locator.offset ? locator.offset - 1 : 0; // one past the fault
  size_t offset = std::min(fault, text.size());
  error.line = 1;
  size_t lineStart = 0;
  for (size_t i = 0; i < offset; ++i)
    if (text[i] == '\n') {
      ++error.line;
      lineStart = i + 1;
    }
  error.column = static_cast<unsigned>(offset - lineStart + 1);
  return error;
}

/// Rejects keys of `object` that are not in `known`: a misspelt field would
/// otherwise read as absent.
Status checkKeys(const Json &object, const std::string &where,
                 std::initializer_list<const char *> known) {
  for (const auto &[name, value] : object.items())
    if (std::find_if(known.begin(), known.end(), [&](const char *k) {
          return name == k;
        }) == known.end())
      return fieldError(where + (where.empty() ? "" : ".") + name,
                        "is not a field of " +
                            (where.empty() ? std::string("a reference program")
                                           : where));
  return {};
}

/// The field `name` of `object`, which must be there.
Result<const Json *> field(const Json &object, const std::string &where,
                           const char *name) {
  auto it = object.find(name);
  if (it == object.end())
    return fieldError(where + (where.empty() ? "" : ".") + name, "is missing");
  return &*it;
}

/// An integer in [min, max]; nlohmann holds large positive ones unsigned.
Result<int64_t> readInteger(const Json &j, const std::string &key, int64_t min,
                            int64_t max) {
  std::string range =
      "must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  if (j.is_number_unsigned()) {
    uint64_t u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(max))
      return fieldError(key, range);
    return static_cast<int64_t>(u);
  }
  if (!j.is_number_integer())
    return fieldError(key, range);
  int64_t v = j.get<int64_t>();
  if (v < min || v > max)
    return fieldError(key, range);
  return v;
}

Result<double> readFloat(const Json &j, const std::string &key) {
  if (j.is_number())
    return j.get<double>();
  if (j.is_string())
    if (std::optional<double> v = floatFromJsonString(j.get_ref<const std::string &>()))
      return *v;
  return fieldError(key, "must be a number or one of \"inf\", \"-inf\", "
                         "\"nan\", \"-nan\", \"0x<NaN bits>\"");
}

Result<std::vector<int>> readValueNumbers(const Json &j, const std::string &key) {
  if (!j.is_array())
    return fieldError(key, "must be an array of value numbers");
  std::vector<int> out;
  for (size_t i = 0; i < j.size(); ++i) {
    Result<int64_t> v = readInteger(j[i], key + "[" + std::to_string(i) + "]", 0,
                                    std::numeric_limits<int>::max());
    if (!v)
      return v.error();
    out.push_back(static_cast<int>(*v));
  }
  return out;
}

Result<TensorType> readType(const Json &j, const std::string &key) {
  if (!j.is_object())
    return fieldError(key, "must be a tensor type {\"shape\": [...], \"dtype\": ...}");
  if (Status keys = checkKeys(j, key, {"shape", "dtype"}); !keys)
    return keys.error();
  Result<const Json *> shape = field(j, key, "shape");
  if (!shape)
    return shape.error();
  if (!(*shape)->is_array())
    return fieldError(key + ".shape", "must be an array of sizes");
  TensorType type;
  for (size_t i = 0; i < (*shape)->size(); ++i) {
    if (std::optional<int64_t> symbol = symbolFromJson((**shape)[i])) {
      type.shape.push_back(*symbol);
      continue;
    }
    Result<int64_t> size = readInteger((**shape)[i], key + ".shape[" + std::to_string(i) + "]",
                                       0, std::numeric_limits<int64_t>::max());
    if (!size)
      return size.error();
    type.shape.push_back(*size);
  }
  Result<const Json *> dtype = field(j, key, "dtype");
  if (!dtype)
    return dtype.error();
  std::optional<DType> parsed;
  if ((*dtype)->is_string())
    parsed = parseDType((*dtype)->get<std::string>());
  if (!parsed)
    return fieldError(key + ".dtype", "must be a torch dtype name, got " + (*dtype)->dump());
  type.dtype = *parsed;
  return type;
}

Result<RefOp> readOp(const Json &j, size_t index) {
  std::string key = "ops[" + std::to_string(index) + "]";
  if (!j.is_object())
    return fieldError(key, "must be an object");
  if (Status keys = checkKeys(j, key, {"fn", "args", "ints", "value", "type"}); !keys)
    return keys.error();
  RefOp op;
  Result<const Json *> fn = field(j, key, "fn");
  if (!fn)
    return fn.error();
  if (!(*fn)->is_string())
    return fieldError(key + ".fn", "must be a string");
  std::optional<RefFn> known = parseRefFn((*fn)->get<std::string>());
  if (!known)
    return fieldError(key + ".fn", "unknown operation '" + (*fn)->get<std::string>() + "'");
  op.fn = *known;
  Result<const Json *> args = field(j, key, "args");
  if (!args)
    return args.error();
  Result<std::vector<int>> values = readValueNumbers(**args, key + ".args");
  if (!values)
    return values.error();
  op.args = values.take();
  if (auto ints = j.find("ints"); ints != j.end()) {
    if (!ints->is_object())
      return fieldError(key + ".ints", "must be an object of integer arrays");
    for (const auto &[name, list] : ints->items()) {
      std::string at = key + ".ints." + name;
      if (!list.is_array())
        return fieldError(at, "must be an array of integers");
      std::vector<int64_t> &out = op.ints[name];
      for (size_t i = 0; i < list.size(); ++i) {
        if (std::optional<int64_t> symbol = symbolFromJson(list[i]);
            symbol && name == "sizes") {
          out.push_back(*symbol);
          continue;
        }
        Result<int64_t> v = readInteger(list[i], at + "[" + std::to_string(i) + "]",
                                        std::numeric_limits<int64_t>::min(),
                                        std::numeric_limits<int64_t>::max());
        if (!v)
          return v.error();
        out.push_back(*v);
      }
    }
  }
  if (auto value = j.find("value"); value != j.end()) {
    Result<double> v = readFloat(*value, key + ".value");
    if (!v)
      return v.error();
    op.value = *v;
  }
  Result<const Json *> type = field(j, key, "type");
  if (!type)
    return type.error();
  Result<TensorType> parsed = readType(**type, key + ".type");
  if (!parsed)
    return parsed.error();
  op.type = parsed.take();
  return op;
}

/// The integer field `name` of `object`, which must be there, in [min, max].
Result<int64_t> readIntegerField(const Json &object, const std::string &where,
                                 const char *name, int64_t min, int64_t max) {
  Result<const Json *> value = field(object, where, name);
  if (!value)
    return value.error();
  return readInteger(**value, where + "." + name, min, max);
}

/// Entry `index` of "symbols": {"example": n} or {"example": n, "base": k,
/// "factor": f}, a base listed before it.
Result<SizeSymbol> readSymbol(const Json &entry, size_t index) {
  std::string key = "symbols[" + std::to_string(index) + "]";
  if (!entry.is_object())
    return fieldError(key, "must be an object {\"example\": ...}");
  if (Status keys = checkKeys(entry, key, {"example", "base", "factor"}); !keys)
    return keys.error();
  constexpr int64_t kMaxSize = std::numeric_limits<int32_t>::max();
  SizeSymbol symbol;
  Result<int64_t> example = readIntegerField(entry, key, "example", 0, kMaxSize);
  if (!example)
    return example.error();
  symbol.example = *example;
  if (!entry.contains("base")) {
    if (entry.contains("factor"))
      return fieldError(key + ".factor", "needs a base symbol");
    return symbol;
  }
  Result<int64_t> base =
      readIntegerField(entry, key, "base", 0, static_cast<int64_t>(index) - 1);
  if (!base)
    return base.error();
  Result<int64_t> factor = readIntegerField(entry, key, "factor", 1, kMaxSize);
  if (!factor)
    return factor.error();
  symbol.base = static_cast<int>(*base);
  symbol.factor = *factor;
  return symbol;
}

Result<ReferenceProgram> readProgram(const Json &j) {
  if (!j.is_object())
    return Error("a reference program must be a JSON object");
  if (Status keys = checkKeys(j, "", {"inputs", "ops", "outputs", "symbols"}); !keys)
    return keys.error();
  ReferenceProgram program;
  if (auto symbols = j.find("symbols"); symbols != j.end()) {
    if (!symbols->is_array())
      return fieldError("symbols", "must be an array of size symbols");
    for (size_t i = 0; i < symbols->size(); ++i) {
      Result<SizeSymbol> symbol = readSymbol((*symbols)[i], i);
      if (!symbol)
        return symbol.error();
      program.symbols.push_back(*symbol);
    }
  }
  Result<const Json *> inputs = field(j, "", "inputs");
  if (!inputs)
    return inputs.error();
  if (!(*inputs)->is_array())
    return fieldError("inputs", "must be an array of tensor types");
  for (size_t i = 0; i < (*inputs)->size(); ++i) {
    Result<TensorType> type = readType((**inputs)[i], "inputs[" + std::to_string(i) + "]");
    if (!type)
      return type.error();
    program.inputs.push_back(type.take());
  }
  Result<const Json *> ops = field(j, "", "ops");
  if (!ops)
    return ops.error();
  if (!(*ops)->is_array())
    return fieldError("ops", "must be an array of operations");
  for (size_t i = 0; i < (*ops)->size(); ++i) {
    Result<RefOp> op = readOp((**ops)[i], i);
    if (!op)
      return op.error();
    program.ops.push_back(op.take());
  }
  Result<const Json *> outputs = field(j, "", "outputs");
  if (!outputs)
    return outputs.error();
  Result<std::vector<int>> values = readValueNumbers(**outputs, "outputs");
  if (!values)
    return values.error();
  program.outputs = values.take();
  if (std::string problem = program.validate(); !problem.empty())
    return Error(problem);
  return program;
}

/// Sizes non-negative or symbols of the program, and a static element count
/// that fits int64_t.
std::string checkType(const TensorType &type, size_t numSymbols) {
  int64_t count = 1;
  for (int64_t size : type.shape) {
    if (isSymbolicSize(size)) {
      if (symbolOfSize(size) >= static_cast<int>(numSymbols))
        return "size s" + std::to_string(symbolOfSize(size)) + " is not a symbol of the program";
      continue;
    }
    if (size != 0 && count > std::numeric_limits<int64_t>::max() / size)
      return "more elements than int64_t counts";
    count *= size;
  }
  return "";
}

} // namespace

const char *indexReductionName(IndexReduction r) {
  switch (r) {
  case IndexReduction::Prod:
    return "prod";
  case IndexReduction::Amax:
    return "amax";
  case IndexReduction::Amin:
    return "amin";
  }
  return "prod";
}

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

std::optional<std::string> floatToJsonString(double value) {
  std::string spelling = nonFiniteSpelling(value);
  if (spelling.empty())
    return std::nullopt;
  return spelling;
}

std::optional<double> floatFromJsonString(std::string_view text) {
  return parseNonFiniteSpelling(text);
}

std::string formatFloat(double value) {
  // The fewest significant digits that read back as `value`.
  char buffer[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*e", precision - 1, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  std::string text(buffer);
  size_t e = text.find('e');
  int exponent = std::atoi(text.c_str() + e + 1);
  bool negative = text[0] == '-';
  std::string digits;
  for (char c : text.substr(0, e))
    if (std::isdigit(static_cast<unsigned char>(c)))
      digits += c;
  while (digits.size() > 1 && digits.back() == '0')
    digits.pop_back();
  std::string out = negative ? "-" : "";
  // Python's repr: positional from 1e-4 up to 1e16, scientific outside.
  if (exponent < -4 || exponent >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1)
      out += "." + digits.substr(1);
    char exp[8];
    std::snprintf(exp, sizeof(exp), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + exp;
  }
  if (exponent < 0)
    return out + "0." + std::string(size_t(-exponent - 1), '0') + digits;
  size_t point = size_t(exponent) + 1;
  if (digits.size() <= point)
    return out + digits + std::string(point - digits.size(), '0') + ".0";
  return out + digits.substr(0, point) + "." + digits.substr(point);
}

bool TensorType::isStatic() const {
  return std::none_of(shape.begin(), shape.end(), isSymbolicSize);
}

std::vector<int64_t> ReferenceProgram::exampleSizes() const {
  return otherSizes(1, 0);
}

std::vector<int64_t> ReferenceProgram::otherSizes(int64_t scale, int64_t offset) const {
  std::vector<int64_t> sizes;
  for (const SizeSymbol &symbol : symbols)
    sizes.push_back(symbol.base >= 0 ? sizes[symbol.base] * symbol.factor
                                     : symbol.example * scale + offset);
  return sizes;
}

Result<std::vector<int64_t>> ReferenceProgram::bindSizes(
    const std::vector<std::vector<int64_t>> &inputShapes) const {
  if (inputShapes.size() != inputs.size())
    return Error("the program takes " + std::to_string(inputs.size()) + " inputs, got " +
                 std::to_string(inputShapes.size()));
  std::vector<int64_t> sizes(symbols.size(), -1);
  std::vector<std::pair<size_t, size_t>> boundAt(symbols.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<int64_t> &want = inputs[i].shape, &got = inputShapes[i];
    if (want.size() != got.size())
      return Error("input " + std::to_string(i) + " has " + std::to_string(got.size()) +
                   " dimensions, the program takes " + std::to_string(want.size()));
    for (size_t d = 0; d < want.size(); ++d) {
      std::string at = "input " + std::to_string(i) + " dimension " + std::to_string(d);
      if (!isSymbolicSize(want[d])) {
        if (got[d] != want[d])
          return Error(at + " has size " + std::to_string(got[d]) + ", the program takes " +
                       std::to_string(want[d]));
        continue;
      }
      int k = symbolOfSize(want[d]);
      const SizeSymbol &symbol = symbols[k];
      int free = symbol.base >= 0 ? symbol.base : k;
      if (symbol.base >= 0 && got[d] % symbol.factor != 0)
        return Error(at + " has size " + std::to_string(got[d]) + ", which is not a multiple of " +
                     std::to_string(symbol.factor));
      int64_t value = symbol.base >= 0 ? got[d] / symbol.factor : got[d];
      if (sizes[free] >= 0 && sizes[free] != value)
        return Error(at + " has size " + std::to_string(got[d]) + " where input " +
                     std::to_string(boundAt[free].first) + " dimension " +
                     std::to_string(boundAt[free].second) + " says otherwise (both are s" +
                     std::to_string(k) + ")");
      sizes[free] = value;
      boundAt[free] = {i, d};
    }
  }
  for (size_t k = 0; k < symbols.size(); ++k) {
    if (symbols[k].base >= 0)
      sizes[k] = sizes[symbols[k].base] * symbols[k].factor;
    if (sizes[k] < 0)
      return Error("no input binds size s" + std::to_string(k));
  }
  return sizes;
}

ReferenceProgram ReferenceProgram::specialize(const std::vector<int64_t> &sizes) const {
  auto resolve = [&](std::vector<int64_t> &list) {
    for (int64_t &size : list)
      if (isSymbolicSize(size))
        size = sizes.at(symbolOfSize(size));
  };
  ReferenceProgram out = *this;
  out.symbols.clear();
  for (TensorType &input : out.inputs)
    resolve(input.shape);
  for (RefOp &op : out.ops) {
    resolve(op.type.shape);
    if (auto it = op.ints.find("sizes"); it != op.ints.end())
      resolve(it->second);
  }
  return out;
}

int64_t TensorType::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::vector<int64_t> ReferenceProgram::indexBounds() const {
  const int numInputs = static_cast<int>(inputs.size());
  std::vector<int64_t> bounds(inputs.size(), 0);
  for (const RefOp &index : ops) {
    if (index.fn != RefFn::Index)
      continue;
    const std::vector<int64_t> &source = typeOf(index.args[0]).shape;
    for (size_t k = 1; k < index.args.size() && k - 1 < source.size(); ++k) {
      int64_t size = source[k - 1];
      if (isSymbolicSize(size))
        continue;
      // Back from the operand to the inputs whose values it carries.
      std::vector<int> stack = {index.args[k]};
      while (!stack.empty()) {
        int id = stack.back();
        stack.pop_back();
        if (id < numInputs) {
          if (!isFloatingPoint(inputs[id].dtype))
            bounds[id] = bounds[id] ? std::min(bounds[id], size) : std::max<int64_t>(size, 1);
          continue;
        }
        const RefOp &op = ops[id - numInputs];
        switch (op.fn) { // the ops that carry their operands' values
        case RefFn::Reshape:
        case RefFn::Expand:
        case RefFn::Permute:
        case RefFn::Slice:
        case RefFn::To:
        case RefFn::Cat:
          stack.insert(stack.end(), op.args.begin(), op.args.end());
          break;
        case RefFn::Where: // the values, not the condition
          stack.insert(stack.end(), op.args.begin() + 1, op.args.end());
          break;
        default:
          break;
        }
      }
    }
  }
  return bounds;
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
  Json j;
  j["inputs"] = Json::array();
  for (const TensorType &t : inputs)
    j["inputs"].push_back(typeToJson(t));
  j["ops"] = Json::array();
  for (const RefOp &op : ops) {
    Json o = {{"fn", refFnName(op.fn)}, {"args", op.args}, {"type", typeToJson(op.type)}};
    if (!op.ints.empty()) {
      o["ints"] = Json::object();
      for (const auto &[name, list] : op.ints)
        o["ints"][name] = name == "sizes" ? sizesToJson(list) : Json(list);
    }
    // Only +0.0 is left out: -0.0 == 0 too, but it is another constant.
    if (std::bit_cast<uint64_t>(op.value) != 0)
      o["value"] = floatToJson(op.value);
    j["ops"].push_back(std::move(o));
  }
  j["outputs"] = outputs;
  if (!symbols.empty()) {
    j["symbols"] = Json::array();
    for (const SizeSymbol &symbol : symbols) {
      Json entry = {{"example", symbol.example}};
      if (symbol.base >= 0) {
        entry["base"] = symbol.base;
        entry["factor"] = symbol.factor;
      }
      j["symbols"].push_back(std::move(entry));
    }
  }
  return j.dump();
}

Result<ReferenceProgram> ReferenceProgram::fromJson(std::string_view text) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return syntaxError(text);
  return readProgram(j);
}

/// A norm's attributes against its input: `normalized` trailing dims of
/// `x`, and one argument for each affine parameter `affine` says it has.
static std::string checkNorm(const RefOp &op, const TensorType &x) {
  const std::vector<int64_t> &normalized = op.ints.at("normalized");
  const std::vector<int64_t> &affine = op.ints.at("affine");
  if (normalized.size() != 1 || normalized[0] < 1 ||
      normalized[0] > static_cast<int64_t>(x.shape.size()))
    return "'normalized' must be one count of trailing dims of the input";
  if (affine.size() != 2 || (affine[0] != 0 && affine[0] != 1) ||
      (affine[1] != 0 && affine[1] != 1) || (op.fn == RefFn::RmsNorm && affine[1]))
    return "'affine' must be [has weight, has bias], each 0 or 1";
  if (op.args.size() != static_cast<size_t>(1 + affine[0] + affine[1]))
    return "takes the input and one argument per affine parameter";
  return "";
}

/// F.group_norm(x, groups, weight, bias): channels (dim 1) a static
/// multiple of the groups; weight and bias one value per channel, in any
/// shape of that many elements.
static std::string checkGroupNorm(const RefOp &op, const TensorType &x,
                                  const TensorType &weight, const TensorType &bias) {
  const std::vector<int64_t> &groups = op.ints.at("groups");
  if (x.shape.size() < 2 || x.shape[1] < 1 || groups.size() != 1 || groups[0] < 1 ||
      x.shape[1] % groups[0] != 0)
    return "'groups' must divide the input's channels (dim 1, static)";
  for (const TensorType *param : {&weight, &bias}) {
    int64_t count = 1;
    for (int64_t d : param->shape)
      count = d < 0 ? -1 : count * d;
    if (count != x.shape[1] || param->dtype != x.dtype)
      return "the weight and bias must hold one value per channel, in the input's dtype";
  }
  if (op.type != x)
    return "the result must have the input's type";
  return "";
}

/// index_put(x, positions [updates, k], values [updates] + x's trailing
/// shape, accumulate): column j of the positions indexes dimension j.
static std::string checkIndexPut(const ReferenceProgram &program, const RefOp &op) {
  const TensorType &x = program.typeOf(op.args[0]), &positions = program.typeOf(op.args[1]),
                   &values = program.typeOf(op.args[2]);
  const std::vector<int64_t> &accumulate = op.ints.at("accumulate");
  bool indexShaped = positions.shape.size() == 2 && !isFloatingPoint(positions.dtype) &&
                     positions.dtype != DType::Bool && positions.shape[1] >= 0 &&
                     positions.shape[1] <= static_cast<int64_t>(x.shape.size());
  if (!indexShaped)
    return "the indices must be integers of shape [updates, k], k at most the input's rank";
  std::vector<int64_t> slice = {positions.shape[0]};
  slice.insert(slice.end(), x.shape.begin() + positions.shape[1], x.shape.end());
  if (values.shape != slice || values.dtype != x.dtype)
    return "the updates must be [updates] + the input's trailing shape, in the input's dtype";
  if (accumulate.size() != 1 || (accumulate[0] != 0 && accumulate[0] != 1))
    return "'accumulate' must be 0 or 1";
  if (op.type != x)
    return "the result must have the input's type";
  return "";
}

/// index_reduce(x, positions [updates] int64 along dim 0, values, reduce).
static std::string checkIndexReduce(const ReferenceProgram &program, const RefOp &op) {
  const TensorType &x = program.typeOf(op.args[0]), &positions = program.typeOf(op.args[1]),
                   &values = program.typeOf(op.args[2]);
  const std::vector<int64_t> &reduce = op.ints.at("reduce");
  if (x.shape.empty() || positions.shape.size() != 1 || positions.dtype != DType::Int64)
    return "the positions must be int64 of shape [updates] along the input's first dimension";
  std::vector<int64_t> slice = {positions.shape[0]};
  slice.insert(slice.end(), x.shape.begin() + 1, x.shape.end());
  if (values.shape != slice || values.dtype != x.dtype)
    return "the updates must be [updates] + the input's shape after its first dimension, "
           "in the input's dtype";
  if (reduce.size() != 1 || reduce[0] < 0 || reduce[0] > 2)
    return "'reduce' must be 0 (prod), 1 (amax) or 2 (amin)";
  if (op.type != x)
    return "the result must have the input's type";
  return "";
}

/// argsort, cumsum, cumprod: along one dim of the input, a result of its
/// shape (argsort's int64, `descending` 0 or 1).
static std::string checkAlongDim(const ReferenceProgram &program, const RefOp &op) {
  const std::vector<int64_t> &dim = op.ints.at("dim");
  const TensorType &x = program.typeOf(op.args[0]);
  if (dim.size() != 1 || dim[0] < 0 || dim[0] >= static_cast<int64_t>(x.shape.size()))
    return "'dim' must be one dimension of the input";
  if (op.fn != RefFn::Argsort)
    return op.type.shape == x.shape ? "" : "the result must have the input's shape";
  const std::vector<int64_t> &descending = op.ints.at("descending");
  if (descending.size() != 1 || (descending[0] != 0 && descending[0] != 1))
    return "'descending' must be 0 or 1";
  if (op.type.shape != x.shape || op.type.dtype != DType::Int64)
    return "the result must be int64 of the input's shape";
  return "";
}

/// What an op's table entry cannot say: how its operands' types, its
/// attributes' values and its result fit together.
static std::string checkOperands(const ReferenceProgram &program, const RefOp &op) {
  switch (op.fn) {
  case RefFn::LayerNorm:
  case RefFn::RmsNorm:
    return checkNorm(op, program.typeOf(op.args[0]));
  case RefFn::GroupNorm:
    return checkGroupNorm(op, program.typeOf(op.args[0]), program.typeOf(op.args[1]),
                          program.typeOf(op.args[2]));
  case RefFn::IndexPut:
    return checkIndexPut(program, op);
  case RefFn::IndexReduce:
    return checkIndexReduce(program, op);
  case RefFn::Argsort:
  case RefFn::Cumsum:
  case RefFn::Cumprod:
    return checkAlongDim(program, op);
  case RefFn::Scalar:
  case RefFn::Full:
  case RefFn::Pad:
    // Both backends turn an integer constant into an int64_t: that must be
    // defined (no NaN, infinity or fraction, within int64's range).
    if (!isFloatingPoint(op.type.dtype) && op.type.dtype != DType::Bool &&
        !(std::trunc(op.value) == op.value && op.value >= -0x1p63 && op.value < 0x1p63))
      return "value " + formatFloat(op.value) + " is not a value of " +
             dtypeName(op.type.dtype);
    return "";
  default: // nothing beyond the table's arity and attributes
    return "";
  }
}

std::string ReferenceProgram::validate() const {
  for (size_t i = 0; i < ops.size(); ++i) {
    const RefOp &op = ops[i];
    const RefFnInfo &info = refFnInfo(op.fn);
    std::string where = "op " + std::to_string(i) + " ('" + info.name + "')";
    int n = static_cast<int>(op.args.size());
    if (n < info.minArgs || (info.maxArgs >= 0 && n > info.maxArgs))
      return where + ": wrong number of arguments (" + std::to_string(n) + ")";
    int self = static_cast<int>(inputs.size() + i);
    for (int a : op.args)
      if (a < 0 || a >= self)
        return where + ": argument " + std::to_string(a) +
               " is not defined before it";
    for (const std::string &name : info.attrs)
      if (!op.ints.count(name))
        return where + ": missing attribute '" + name + "'";
    if (std::string problem = checkType(op.type, symbols.size()); !problem.empty())
      return where + ": " + problem;
    if (std::string problem = checkOperands(*this, op); !problem.empty())
      return where + ": " + problem;
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (std::string problem = checkType(inputs[i], symbols.size()); !problem.empty())
      return "input " + std::to_string(i) + ": " + problem;
  for (size_t k = 0; k < symbols.size(); ++k) {
    const SizeSymbol &symbol = symbols[k];
    std::string where = "symbol s" + std::to_string(k);
    if (symbol.base >= 0) {
      if (symbol.base >= static_cast<int>(k) || symbols[symbol.base].base >= 0)
        return where + ": its base must be a free symbol listed before it";
      if (symbol.factor < 1 || symbol.example != symbols[symbol.base].example * symbol.factor)
        return where + ": its example must be its factor times its base's";
      continue;
    }
    // Held by an input dimension, itself or as a multiple.
    auto holds = [&](int64_t size) {
      if (!isSymbolicSize(size))
        return false;
      int s = symbolOfSize(size);
      return s == static_cast<int>(k) ||
             (s < static_cast<int>(symbols.size()) && symbols[s].base == static_cast<int>(k));
    };
    bool held = std::any_of(inputs.begin(), inputs.end(), [&](const TensorType &t) {
      return std::any_of(t.shape.begin(), t.shape.end(), holds);
    });
    if (!held)
      return where + ": no input has a dimension of this size, so nothing binds it";
  }
  for (const RefOp &op : ops)
    if (auto sizes = op.ints.find("sizes"); sizes != op.ints.end())
      for (int64_t size : sizes->second)
        if (isSymbolicSize(size) && symbolOfSize(size) >= static_cast<int>(symbols.size()))
          return "op '" + std::string(refFnName(op.fn)) + "': size s" + std::to_string(symbolOfSize(size)) +
                 " is not a symbol of the program";
  int count = static_cast<int>(inputs.size() + ops.size());
  if (outputs.empty())
    return "the program returns nothing";
  for (int v : outputs)
    if (v < 0 || v >= count)
      return "output " + std::to_string(v) + " is not a value of the program";
  return "";
}

} // namespace dice
