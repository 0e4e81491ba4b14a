//===- Fingerprint.cpp - stable identity of a kernel request --------------===//

#include "Fingerprint.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::dice;

std::string mlir::dice::computeFingerprint(KernelRequestOp request) {
  // Print a copy whose own identity attributes are neutral, so the digest
  // covers only the computation.
  OpBuilder builder(request->getContext());
  auto copy = cast<KernelRequestOp>(builder.clone(*request));
  copy.setFingerprint("00000000");
  copy.removeScaffoldAttr();
  // Where the ops stood in their function is no part of what they compute.
  copy->walk(
      [](Operation *op) { op->removeAttr(DiceDialect::kPositionAttrName); });

  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  flags.printGenericOpForm().useLocalScope().enableDebugInfo(false);
  copy->print(os, flags);
  copy->erase();

  std::array<uint8_t, 32> digest = llvm::SHA256::hash(
      ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(text.data()), text.size()));
  // 64 bits are plenty to key a kernel database of one project's requests.
  static const char *hex = "0123456789abcdef";
  std::string fingerprint;
  for (size_t i = 0; i < 8; ++i) {
    fingerprint += hex[digest[i] >> 4];
    fingerprint += hex[digest[i] & 15];
  }
  return fingerprint;
}
