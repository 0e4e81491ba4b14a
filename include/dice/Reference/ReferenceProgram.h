//===- ReferenceProgram.h - what a kernel request computes ------*- C++ -*-===//
//
// One small representation of a kernel request's computation: a straight-
// line list of torch operations over tensors whose sizes are static or
// symbols bound at run time (dynamic dimensions). It is rendered
// once from the request's region (ReferenceBuilder, in the compiler) and
// consumed by two backends: the Python printer (the KernelBench-format
// `Model` shown to the DICE model) and the ATen executor (the verifier's
// reference outputs and eager baseline). Both backends implement the same
// closed vocabulary, so the prompt, the check and the baseline cannot
// disagree. Plain C++: no LLVM, no LibTorch; JSON travels between processes.
//
// The vocabulary is closed: RefOps.def lists every operation (`fn`), its
// arguments and attributes; docs/reference-program.md says what each
// computes and how it is printed.
//
// A dynamic dimension is a size symbol: the printer spells it through the
// input that holds it (`x0.shape[0]`), the executor binds it from the actual
// inputs, and the verifier specializes the program at the example sizes and
// at others (docs/reference-program.md).
//
//===----------------------------------------------------------------------===//

#ifndef DICE_REFERENCE_REFERENCEPROGRAM_H
#define DICE_REFERENCE_REFERENCEPROGRAM_H

#include "dice/Reference/RefOps.h"
#include "dice/Support/Result.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dice {

/// Element types a reference program handles, named as torch names them.
enum class DType { Float32, Float16, BFloat16, Float64, Int64, Int32, Int16, Int8, UInt8, Bool };

/// How `index_reduce` combines the updates at a position with the element
/// there (its `reduce` attribute).
enum class IndexReduction : int64_t { Prod = 0, Amax = 1, Amin = 2 };

/// torch's name of `r`: "prod", "amax", "amin".
const char *indexReductionName(IndexReduction r);

/// "float32", "int64", ...: the `torch.<name>` spelling.
const char *dtypeName(DType dtype);
std::optional<DType> parseDType(const std::string &name);
bool isFloatingPoint(DType dtype);

/// A size known only at run time: a dynamic dimension. Symbol `k` is spelled
/// symbolicSize(k) (a negative number) in shapes and slice sizes.
struct SizeSymbol {
  /// The size the program is shown with (get_inputs) and first verified at.
  int64_t example = 1;
  /// >= 0: this size is `factor` times symbol `base` (a flattened dimension);
  /// < 0: a free size, read from the first input dimension that holds it.
  int base = -1;
  int64_t factor = 1;
  bool operator==(const SizeSymbol &other) const = default;
};
constexpr int64_t symbolicSize(int symbol) { return -1 - int64_t(symbol); }
constexpr bool isSymbolicSize(int64_t size) { return size < 0; }
constexpr int symbolOfSize(int64_t size) { return static_cast<int>(-1 - size); }

struct TensorType {
  /// Static sizes, or symbolicSize(k) for a dynamic one; empty for 0-d.
  std::vector<int64_t> shape;
  DType dtype = DType::Float32;

  int64_t numElements() const; ///< of a static shape
  bool isStatic() const;
  bool operator==(const TensorType &other) const = default;
};

/// One operation; its result is value number `inputs.size() + index`.
struct RefOp {
  RefFn fn = RefFn::Scalar;
  std::vector<int> args;                           ///< value numbers
  std::map<std::string, std::vector<int64_t>> ints; ///< dims, shape, stride...
  double value = 0; ///< scalar/full/pad value: any double, -0.0, inf, NaN
  TensorType type;                                 ///< result type
};

struct ReferenceProgram {
  std::vector<TensorType> inputs; ///< values 0..inputs.size()-1
  std::vector<RefOp> ops;
  std::vector<int> outputs; ///< value numbers returned, in result order
  /// The dynamic sizes; empty for a static program.
  std::vector<SizeSymbol> symbols;

  bool isStatic() const { return symbols.empty(); }
  /// Every symbol's value at its example (derived ones computed).
  std::vector<int64_t> exampleSizes() const;
  /// Every symbol's value with each free symbol at `scale` times its example
  /// plus `offset`: another shape to verify at.
  std::vector<int64_t> otherSizes(int64_t scale, int64_t offset) const;
  /// Every symbol's value read from the shapes of actual inputs; an error
  /// names the input and dimension that disagree with the program (a rank,
  /// a static size, or two dimensions of one symbol of different sizes).
  Result<std::vector<int64_t>> bindSizes(
      const std::vector<std::vector<int64_t>> &inputShapes) const;
  /// The static program with symbol k at `sizes[k]` (one per symbol).
  ReferenceProgram specialize(const std::vector<int64_t> &sizes) const;

  /// For each input, the exclusive bound on the values it may hold because
  /// it reaches an `index` operand (through views, casts, a cat or a
  /// where's values): the smallest size it indexes there. 0 for an input
  /// that indexes nothing (or a dynamic size). Trial inputs and get_inputs
  /// draw such an input in [0, bound): a user's indices are in range, and
  /// any other value makes the reference itself fail.
  std::vector<int64_t> indexBounds() const;
  /// Type of value `id`.
  const TensorType &typeOf(int id) const;
  /// Adds an op and returns its value number.
  int add(RefOp op);

  /// The JSON form (docs/reference-program.md). Every `value` reads back
  /// bit for bit: finite ones as JSON numbers, the others as the strings of
  /// floatToJsonString.
  std::string toJson() const;
  /// Parses what toJson wrote, then validate()s it. The program is whole or
  /// not returned: the error's `key` names the field at fault
  /// ("ops[3].value"), its line and column a JSON syntax error.
  static Result<ReferenceProgram> fromJson(std::string_view text);
  /// Checks arity, value numbering and attributes of every op; an empty
  /// string means well-formed. Both backends call it before running.
  std::string validate() const;
};

/// How JSON spells a float that it has no number for, in the project's one
/// spelling (dice/Support/NonFinite.h): "inf", "-inf", "nan", "-nan", and
/// "0x<16 hex digits>" (the bits of any other NaN); nullopt for a finite
/// `value`, which JSON writes as a number.
std::optional<std::string> floatToJsonString(double value);
/// The inverse of floatToJsonString; nullopt for any other string.
std::optional<double> floatFromJsonString(std::string_view text);

/// The shortest decimal spelling of a finite `value` that reads back as
/// exactly `value`, always a float token (`2.0`, `0.1`, `1e-05`): how
/// printed programs and verdicts keep numbers exact and readable.
std::string formatFloat(double value);

/// The KernelBench-format Python program (`class Model(nn.Module)`,
/// `get_inputs()`, `get_init_inputs()`) that computes `program`.
std::string renderPythonModel(const ReferenceProgram &program);

} // namespace dice

#endif // DICE_REFERENCE_REFERENCEPROGRAM_H
