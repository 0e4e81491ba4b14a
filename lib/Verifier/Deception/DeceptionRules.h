//===- DeceptionRules.h - which names are hacks ------------------*- C++ -*-===//
//
// The name lists behind each deception kind, kept apart from the AST walk so
// that a reviewer can read what is allowed and what is not in one place.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_LIB_DECEPTION_DECEPTIONRULES_H
#define DICE_LIB_DECEPTION_DECEPTIONRULES_H

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace clang {
class FunctionDecl;
} // namespace clang

namespace dice {

/// ATen/torch functions and Tensor methods that allocate, describe or view a
/// tensor without computing on its elements.
bool isAllowedTorchCall(llvm::StringRef name);
/// The library a call computes in ("cuBLAS", "thrust", ...), or nothing.
/// `ns` is the callee's outermost namespace, `cls` its class.
std::optional<std::string> vendorLibraryOf(llvm::StringRef name, llvm::StringRef ns,
                                           llvm::StringRef cls);
bool isStreamOrGraphCall(llvm::StringRef name);
/// C or std functions that start threads (pthread_create, std::async, omp_*).
bool isThreadCall(llvm::StringRef name);
/// C or std functions that reach processes, files, sockets or the environment.
bool isSystemCall(llvm::StringRef name);
/// An `#include`/`#embed` name that is a path on the machine (absolute, or
/// climbing out with `..`) rather than a header of the include directories.
bool isFilePathInclude(llvm::StringRef name);
/// The C library's environment (`environ`, `__environ`), which a candidate
/// can walk without calling anything.
bool isEnvironmentVariable(llvm::StringRef name);
bool isFilesystemNamespaceMember(const clang::FunctionDecl *callee);
bool isFileStreamClass(llvm::StringRef name);
/// cudaMemcpyToSymbol and friends: their first argument is written.
bool isSymbolWriteCall(llvm::StringRef name);
/// The first PTX instruction in `asmText` that branches, traps or exits.
std::optional<std::string> findControlFlowPtx(llvm::StringRef asmText);

} // namespace dice

#endif // DICE_LIB_DECEPTION_DECEPTIONRULES_H
