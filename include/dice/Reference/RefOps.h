//===- RefOps.h - the reference program's operations ------------*- C++ -*-===//
//
// The closed vocabulary of reference programs, as a type: one enumerator per
// line of RefOps.def, and what the table says of each. Plain C++.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_REFERENCE_REFOPS_H
#define DICE_REFERENCE_REFOPS_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dice {

/// An operation of a reference program (RefOps.def).
enum class RefFn : uint8_t {
#define DICE_REF_OP(Enum, Name, MinArgs, MaxArgs, Attrs, Category) Enum,
#include "dice/Reference/RefOps.def"
};

/// What kind of computation an operation is.
enum class RefCategory : uint8_t {
  Constant,      ///< no tensor operand read elementwise: scalar, full, arange, dim_size
  Elementwise,   ///< one result element per operand element (broadcast)
  Compound,      ///< an elementwise torch.nn.functional function
  Layout,        ///< views, copies, padding, concatenation
  Reduction,     ///< over some dims, which the result drops
  Contraction,   ///< matmul, conv
  Window,        ///< pooling
  Indexing,      ///< gathers, scatters, sorts
  Scan,          ///< cumulative along one dim
  Normalization, ///< softmax family and the norms
};

/// Where torch's Python binding takes a Python number for a tensor operand
/// of a binary function, and how ATen then receives it.
enum class RefNumbers : uint8_t {
  Tensors,      ///< nowhere: a constant operand is a 0-d tensor
  ScalarSecond, ///< second operand, an at::Scalar overload
  ScalarEither, ///< either operand, at::Scalar overloads
  Wrapped,      ///< either operand, as a wrapped 0-d tensor
};

struct RefFnInfo {
  const char *name; ///< the JSON and printed-program spelling
  int minArgs;
  int maxArgs; ///< -1: any number
  std::vector<std::string> attrs; ///< `ints` keys it must have
  RefCategory category;
  RefNumbers numbers; ///< Tensors for all but the binary functions
};

const RefFnInfo &refFnInfo(RefFn fn);
inline const char *refFnName(RefFn fn) { return refFnInfo(fn).name; }
/// The operation spelled `name`; nullopt for a name outside the vocabulary.
std::optional<RefFn> parseRefFn(std::string_view name);
/// Every operation, in table order.
const std::vector<RefFn> &allRefFns();

} // namespace dice

#endif // DICE_REFERENCE_REFOPS_H
