//===- Fingerprint.cpp - stable identity of a kernel request --------------===//

#include "Fingerprint.h"

#include "dice/Scaffold/Fingerprint.h"
#include "dice/Scaffold/ReferenceBuilder.h"

using namespace mlir;
using namespace mlir::dice;

FailureOr<std::string> mlir::dice::computeFingerprint(KernelRequestOp request) {
  std::string whyNot;
  std::optional<::dice::ReferenceProgram> program =
      ::dice::buildReferenceProgram(request.getBody(), whyNot);
  if (!program)
    return request.emitOpError()
           << "cannot render its reference program: " << whyNot;
  return ::dice::fingerprintOf(*program);
}
