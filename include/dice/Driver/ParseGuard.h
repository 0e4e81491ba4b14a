//===- ParseGuard.h - find inputs MLIR's parser crashes on -------*- C++ -*-===//
//
// MLIR 22's custom parsers of linalg.broadcast, linalg.transpose and
// linalg.reduce store the null attribute that a malformed integer list
// (`dimensions = [0, x]`) parses to, and the process crashes. dice-opt must
// never crash on its input, so it parses the input once in a child process
// first: a parser that dies there is reported as an error with the
// diagnostics it gave before it died, and the real parse never meets it.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_DRIVER_PARSEGUARD_H
#define DICE_DRIVER_PARSEGUARD_H

#include "mlir/IR/DialectRegistry.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace mlir::dice {

/// How a trial parse in a child process ended, when it crashed.
struct ParserCrash {
  int signal = 0;
  /// The diagnostics emitted before the crash, as dice-opt prints them
  /// (`file:line:col: error: ...` with the source line).
  std::string diagnostics;
};

/// Parses `text` (named `bufferName`; each chunk between lines equal to
/// `splitMarker`, when it is not empty, as -split-input-file does) with the
/// dialects of `registry`, ops of unknown dialects allowed, in a child
/// process. Returns what happened when the parser crashed, nothing when it
/// finished, whether the text parsed or not.
std::optional<ParserCrash> findParserCrash(llvm::StringRef text,
                                           llvm::StringRef bufferName,
                                           const DialectRegistry &registry,
                                           llvm::StringRef splitMarker = "");

} // namespace mlir::dice

#endif // DICE_DRIVER_PARSEGUARD_H
