//===- DiceOps.cpp - dice dialect operations ------------------------------===//

#include "dice/Dialect/Dice/DiceOps.h"
#include "dice/Reference/ReferenceProgram.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::dice;

#define GET_OP_CLASSES
#include "dice/Dialect/Dice/DiceOps.cpp.inc"

/// Fingerprints are lowercase hex digests; short ones collide too easily to
/// key a kernel database.
static bool isWellFormedFingerprint(StringRef fingerprint) {
  return fingerprint.size() >= 8 && llvm::all_of(fingerprint, [](char c) {
           return llvm::isDigit(c) || (c >= 'a' && c <= 'f');
         });
}

/// `sm_` followed by the compute capability digits (and an optional `a`
/// suffix, as in `sm_90a`).
static bool isGpuArch(StringRef arch) {
  if (!arch.consume_front("sm_"))
    return false;
  arch.consume_back("a");
  return !arch.empty() && llvm::all_of(arch, llvm::isDigit);
}

/// Reports the first position where `actual` and `expected` type lists
/// differ, naming both and what they belong to.
static LogicalResult verifyTypesMatch(Operation *op, TypeRange actual,
                                      StringRef actualWhat,
                                      TypeRange expected,
                                      StringRef expectedWhat) {
  if (actual.size() != expected.size())
    return op->emitOpError() << "has " << actual.size() << " " << actualWhat
                             << "s but " << expected.size() << " "
                             << expectedWhat << "s";
  for (auto [i, types] : llvm::enumerate(llvm::zip(actual, expected)))
    if (std::get<0>(types) != std::get<1>(types))
      return op->emitOpError()
             << actualWhat << " #" << i << " has type " << std::get<0>(types)
             << " but " << expectedWhat << " #" << i << " has type "
             << std::get<1>(types);
  return success();
}

//===----------------------------------------------------------------------===//
// KernelRequestOp
//===----------------------------------------------------------------------===//

YieldOp KernelRequestOp::getYield() {
  return llvm::cast<YieldOp>(getBody().front().getTerminator());
}

LogicalResult KernelRequestOp::verify() {
  if (!isWellFormedFingerprint(getFingerprint()))
    return emitOpError() << "fingerprint must be at least 8 lowercase hex "
                            "digits, got '"
                         << getFingerprint() << "'";
  if (ScaffoldAttr scaffold = getScaffoldAttr()) {
    // The attribute verified that the program parses; here it must also be
    // a function of exactly this request's operands and results.
    ::dice::Result<::dice::ReferenceProgram> program =
        ::dice::ReferenceProgram::fromJson(scaffold.getProgram().str());
    if (!program)
      return emitOpError() << "scaffold program is not a reference program: "
                           << program.error().describe();
    if (program->inputs.size() != getInputs().size() ||
        program->outputs.size() != getNumResults())
      return emitOpError() << "scaffold program takes "
                           << program->inputs.size() << " inputs and returns "
                           << program->outputs.size()
                           << " values, but the request has "
                           << getInputs().size() << " operands and "
                           << getNumResults() << " results";
  }
  // Candidates are written for a scaffold and stored under (fingerprint,
  // gpu_arch, scaffold version, model): a candidate list without those has
  // no key and no prompt it answers.
  bool hasOrigin = getModelAttr() || getGpuArchAttr();
  if (getCandidatesAttr() || hasOrigin) {
    if (!getScaffoldAttr())
      return emitOpError() << "has candidates but no scaffold";
    if (!getCandidatesAttr())
      return emitOpError() << "names a model and GPU architecture but has no "
                              "candidates";
    if (!getModelAttr() || getModel()->empty())
      return emitOpError() << "has candidates but no model that wrote them";
    if (!getGpuArchAttr() || !isGpuArch(*getGpuArch()))
      return emitOpError() << "gpu_arch must look like 'sm_90', got '"
                           << getGpuArch().value_or("") << "'";
  }
  return success();
}

LogicalResult KernelRequestOp::verifyRegions() {
  Block &entry = getBody().front();
  if (entry.getNumArguments() != getInputs().size())
    return emitOpError() << "region has " << entry.getNumArguments()
                         << " arguments but the request has "
                         << getInputs().size() << " operands";
  for (auto [i, pair] :
       llvm::enumerate(llvm::zip(entry.getArguments(), getInputs()))) {
    auto [arg, input] = pair;
    if (arg.getType() != input.getType()) {
      InFlightDiagnostic diag = emitOpError()
                                << "region argument #" << i << " has type "
                                << arg.getType() << " but operand #" << i
                                << " has type " << input.getType();
      diag.attachNote(arg.getLoc()) << "region argument declared here";
      return diag;
    }
  }
  if (!llvm::isa<YieldOp>(entry.getTerminator()))
    return emitOpError() << "region must end with 'dice.yield'";
  YieldOp yield = getYield();
  if (yield.getValues().size() != getNumResults()) {
    InFlightDiagnostic diag = emitOpError()
                              << "yield returns " << yield.getValues().size()
                              << " values but the request has "
                              << getNumResults() << " results";
    diag.attachNote(yield.getLoc()) << "yield is here";
    return diag;
  }
  for (auto [i, pair] :
       llvm::enumerate(llvm::zip(yield.getValues(), getResultTypes()))) {
    auto [value, type] = pair;
    if (value.getType() != type) {
      InFlightDiagnostic diag = emitOpError()
                                << "yield value #" << i << " has type "
                                << value.getType() << " but result #" << i
                                << " has type " << type;
      diag.attachNote(yield.getLoc()) << "yield is here";
      return diag;
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// KernelOp
//===----------------------------------------------------------------------===//

LogicalResult KernelOp::verify() {
  StringRef name = getSymName();
  if (!name.starts_with("k_") || !isWellFormedFingerprint(name.drop_front(2)))
    return emitOpError() << "symbol name must be 'k_' followed by the request "
                            "fingerprint, got '@"
                         << name << "'";
  FunctionType type = getFunctionType();
  for (auto [i, input] : llvm::enumerate(type.getInputs()))
    if (!llvm::isa<RankedTensorType>(input))
      return emitOpError() << "signature input #" << i
                           << " must be a ranked tensor, got " << input;
  for (auto [i, result] : llvm::enumerate(type.getResults()))
    if (!llvm::isa<RankedTensorType>(result))
      return emitOpError() << "signature result #" << i
                           << " must be a ranked tensor, got " << result;
  if (getSource().trim().empty())
    return emitOpError() << "kernel source must not be empty";
  if (getArtifact() && getArtifact()->empty())
    return emitOpError() << "artifact path must not be empty when given";
  return success();
}

//===----------------------------------------------------------------------===//
// CallOp
//===----------------------------------------------------------------------===//

CallInterfaceCallable CallOp::getCallableForCallee() { return getCalleeAttr(); }

void CallOp::setCalleeFromCallable(CallInterfaceCallable callee) {
  setCalleeAttr(llvm::cast<FlatSymbolRefAttr>(llvm::cast<SymbolRefAttr>(callee)));
}

Operation::operand_range CallOp::getArgOperands() { return getInputs(); }

MutableOperandRange CallOp::getArgOperandsMutable() {
  return getInputsMutable();
}

LogicalResult CallOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  StringRef calleeName = getCallee();
  Operation *callee = symbolTable.lookupNearestSymbolFrom(*this, getCalleeAttr());
  if (!callee)
    return emitOpError() << "calls '@" << calleeName
                         << "', which is not defined in the enclosing module";
  auto kernel = llvm::dyn_cast<KernelOp>(callee);
  if (!kernel) {
    InFlightDiagnostic diag = emitOpError()
                              << "callee '@" << calleeName << "' is a '"
                              << callee->getName() << "', not a 'dice.kernel'";
    diag.attachNote(callee->getLoc()) << "callee defined here";
    return diag;
  }
  if (!kernel.getVerdict().isAccepted()) {
    InFlightDiagnostic diag =
        emitOpError() << "calls kernel '@" << calleeName << "' whose verdict is '"
                      << ::dice::verdictStatusName(kernel.getVerdict().getStatus())
                      << "'; only accepted kernels may be called";
    diag.attachNote(kernel.getLoc()) << "kernel defined here";
    return diag;
  }
  FunctionType type = kernel.getFunctionType();
  if (failed(verifyTypesMatch(*this, getInputs().getTypes(), "operand",
                              type.getInputs(), "kernel input")) ||
      failed(verifyTypesMatch(*this, getResultTypes(), "result",
                              type.getResults(), "kernel result")))
    return failure();
  return success();
}
