//===- ReferenceOperands.h - how constant operands are spelled --*- C++ -*-===//
//
// A `scalar` operand of an elementwise op is either a Python number (torch
// promotes it as a "wrapped number": it never widens the other operand's
// dtype within a category) or a 0-d tensor of its own dtype. The two promote
// differently, so the Python printer and the ATen executor must make the same
// choice for every operand; this is the one place that makes it.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_REFERENCE_REFERENCEOPERANDS_H
#define DICE_REFERENCE_REFERENCEOPERANDS_H

#include "dice/Reference/ReferenceProgram.h"

#include <cstddef>

namespace dice {

/// Whether value `id` is the result of a `scalar` op.
bool isScalarValue(const ReferenceProgram &program, int id);

/// Whether operand `index` of `op` is passed as a Python number (an
/// at::Scalar / wrapped number) rather than as a tensor. True only for a
/// scalar operand beside a tensor operand, in a position where torch's
/// Python binding accepts a number: the second operand of the binary ops
/// except maximum/minimum/atan2/logical_and/logical_or, the first operand of
/// add/sub/mul/div/pow, and the value operands of `where` when its condition
/// is a tensor.
bool isLiteralOperand(const ReferenceProgram &program, const RefOp &op,
                      size_t index);

} // namespace dice

#endif // DICE_REFERENCE_REFERENCEOPERANDS_H
