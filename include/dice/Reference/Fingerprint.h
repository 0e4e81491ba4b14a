//===- Fingerprint.h - the identity of a kernel request ---------*- C++ -*-===//
//
// A kernel request is named by what it computes: a hash of its reference
// program in canonical form (each value hashed from its operation, its
// attributes, its result type and the hashes of its operands; the program
// from its input types and its outputs' hashes), under a scheme version.
// Nothing printed by MLIR goes in, so kernel databases, replay files and the
// shipped kernels survive LLVM upgrades; SSA names, attribute spellings and
// the order of independent ops do not change it.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_REFERENCE_FINGERPRINT_H
#define DICE_REFERENCE_FINGERPRINT_H

#include "dice/Reference/ReferenceProgram.h"

#include <string>

namespace dice {

/// The version of the hash below; part of every kernel database key. 1 was
/// a hash of MLIR's printed generic form.
inline constexpr int kFingerprintScheme = 2;

/// 16 lower-case hex digits (64 bits of a SHA-256): plenty to key one
/// project's requests, and short enough for symbol names (`k_<fp>`).
std::string fingerprintOf(const ReferenceProgram &program);

} // namespace dice

#endif // DICE_REFERENCE_FINGERPRINT_H
