//===- Lower.cpp - kernel calls become calls of the kernel libraries ------===//
//
// The last DICE pass: what it leaves is plain func/linalg/tensor IR plus, on
// disk, what running that IR needs: the kernel libraries, the manifest the
// runtime loads them from (docs/runtime.md) and one C-interface trampoline
// per kernel that forwards the MLIR calling convention to dice_runtime_call.
// The pass rewrites the IR; the files are the artifact library's
// (dice/Runtime/Artifacts.h), written through the driver's services.
//
//===----------------------------------------------------------------------===//

#include "KernelStore.h"

#include "dice/Dialect/Dice/DiceOps.h"
#include "dice/Driver/Services.h"
#include "dice/Runtime/Artifacts.h"
#include "dice/Runtime/Manifest.h"
#include "dice/Reference/ReferenceBuilder.h"
#include "dice/Transforms/Passes.h"
#include "dice/VerifierCore/Verdict.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <string>
#include <vector>

namespace mlir::dice {
#define GEN_PASS_DEF_DICELOWER
#include "dice/Transforms/Passes.h.inc"
} // namespace mlir::dice

using namespace mlir;
using namespace mlir::dice;

namespace {


/// The kernel's inputs or results as the manifest and trampoline see them.
FailureOr<std::vector<::dice::ManifestTensor>>
signatureOf(KernelOp kernel, TypeRange types, StringRef what) {
  std::vector<::dice::ManifestTensor> sigs;
  for (auto [i, type] : llvm::enumerate(types)) {
    auto tensor = cast<RankedTensorType>(type);
    std::optional<::dice::DType> dtype =
        ::dice::toDType(tensor.getElementType());
    if (!dtype)
      return kernel.emitOpError() << what << " #" << i << " has element type "
                                  << tensor.getElementType()
                                  << ", which the DICE runtime cannot pass";
    ::dice::ManifestTensor sig{{}, *dtype};
    for (int64_t d : tensor.getShape())
      sig.shape.push_back(ShapedType::isDynamic(d) ? -1 : d); // -1: dynamic
    sigs.push_back(std::move(sig));
  }
  return sigs;
}

/// The kernel's verdict in the verifier's own JSON (dice::Verdict), so the
/// manifest spells it as every other verdict is spelled.
std::string verdictJson(KernelOp kernel) {
  ::dice::Verdict verdict = fromVerdictAttr(kernel.getVerdict());
  verdict.fingerprint = kernel.getFingerprint().str();
  return verdict.toJson();
}

struct LowerPass : public mlir::dice::impl::DiceLowerBase<LowerPass> {
  using Base::Base;

  void runOnOperation() override;

private:
  /// Writes the kernel's library and trampoline and returns its manifest
  /// entry.
  FailureOr<::dice::ManifestKernel>
  writeKernel(KernelOp kernel, StringRef dir, StringRef manifestPath);
  /// The declaration of `kernel` already in its module (from an earlier
  /// lowering), null if there is none, or failure when its symbol is taken.
  FailureOr<func::FuncOp> existingDeclaration(KernelOp kernel);
  /// The private declaration that replaces `kernel` in its module.
  func::FuncOp declare(KernelOp kernel);
};

FailureOr<::dice::ManifestKernel>
LowerPass::writeKernel(KernelOp kernel, StringRef dir, StringRef manifestPath) {
  std::optional<StringRef> artifact = kernel.getArtifact();
  if (!artifact)
    return kernel.emitOpError()
           << "is called but has no artifact; dice-lower needs the built "
              "kernel library";
  FunctionType type = kernel.getFunctionType();
  FailureOr<std::vector<::dice::ManifestTensor>> inputs =
      signatureOf(kernel, type.getInputs(), "input");
  FailureOr<std::vector<::dice::ManifestTensor>> results =
      signatureOf(kernel, type.getResults(), "result");
  if (failed(inputs) || failed(results))
    return failure();

  ::dice::LoweredKernel lowered{kernel.getFingerprint().str(), artifact->str(),
                                *inputs, *results, verdictJson(kernel)};
  ::dice::Result<::dice::ManifestKernel> entry = ::dice::writeKernelArtifacts(
      dir.str(), manifestPath.str(), lowered,
      getDiceServices(&getContext()).artifactWriter());
  if (!entry)
    return kernel.emitOpError() << entry.error().describe();
  ++numKernels;
  return entry.take();
}

FailureOr<func::FuncOp> LowerPass::existingDeclaration(KernelOp kernel) {
  auto module = cast<ModuleOp>(kernel->getParentOp());
  std::string name = ("dice_k_" + kernel.getFingerprint()).str();
  Operation *existing = module.lookupSymbol(name);
  if (!existing)
    return func::FuncOp();
  auto func = dyn_cast<func::FuncOp>(existing);
  if (func && func.isExternal() &&
      func.getFunctionType() == kernel.getFunctionType())
    return func;
  InFlightDiagnostic diag = kernel.emitOpError()
                            << "cannot be lowered: the symbol '@" << name
                            << "' is already defined differently";
  diag.attachNote(existing->getLoc()) << "defined here";
  return diag;
}

func::FuncOp LowerPass::declare(KernelOp kernel) {
  OpBuilder builder(kernel);
  auto func = func::FuncOp::create(builder, kernel.getLoc(),
                                   ("dice_k_" + kernel.getFingerprint()).str(),
                                   kernel.getFunctionType());
  func.setPrivate();
  func->setAttr("llvm.emit_c_interface", builder.getUnitAttr());
  func->setAttr(
      DiceDialect::kLibraryAttrName,
      builder.getStringAttr(("k_" + kernel.getFingerprint() + ".so").str()));
  return func;
}

void LowerPass::runOnOperation() {
  ModuleOp module = getOperation();
  FailureOr<::dice::Config> config = loadPassConfig(module, configFile);
  if (failed(config))
    return signalPassFailure();
  std::string dir =
      artifacts.empty() ? config->artifactDir : std::string(artifacts);

  SmallVector<mlir::dice::CallOp> calls;
  llvm::SetVector<KernelOp> used;
  SymbolTableCollection symbols;
  module.walk([&](mlir::dice::CallOp call) {
    calls.push_back(call);
    // dice.call's verifier guarantees an accepted dice.kernel callee.
    used.insert(cast<KernelOp>(
        symbols.lookupNearestSymbolFrom(call, call.getCalleeAttr())));
  });

  // Symbol clashes are found before anything is written.
  llvm::DenseMap<Operation *, func::FuncOp> declarations;
  for (KernelOp kernel : used) {
    FailureOr<func::FuncOp> existing = existingDeclaration(kernel);
    if (failed(existing))
      return signalPassFailure();
    declarations[kernel] = *existing;
  }

  if (!used.empty()) {
    ::dice::Result<std::string> manifestPath =
        ::dice::prepareArtifactsDir(dir);
    if (!manifestPath) {
      emitError(module.getLoc())
          << "dice-lower: " << manifestPath.error().describe();
      return signalPassFailure();
    }
    std::map<std::string, ::dice::ManifestKernel> entries;
    bool failedAny = false;
    for (KernelOp kernel : used) {
      FailureOr<::dice::ManifestKernel> entry =
          writeKernel(kernel, dir, *manifestPath);
      if (failed(entry))
        failedAny = true;
      else
        entries[kernel.getFingerprint().str()] = std::move(*entry);
    }
    if (failedAny)
      return signalPassFailure();
    if (::dice::Status merged = ::dice::mergeIntoManifest(
            *manifestPath, entries, getDiceServices(&getContext()).artifactWriter());
        !merged) {
      // A manifest that cannot be read is an error at its own line.
      const ::dice::Error &error = merged.error();
      Location loc = error.file.empty()
                         ? module.getLoc()
                         : FileLineColLoc::get(&getContext(), error.file,
                                               error.line, error.column);
      emitError(loc) << "dice-lower: " << error.message;
      return signalPassFailure();
    }
  }

  // The IR changes only once everything on disk is in place.
  for (KernelOp kernel : used)
    if (!declarations[kernel])
      declarations[kernel] = declare(kernel);
  for (mlir::dice::CallOp call : calls) {
    Operation *kernel =
        symbols.lookupNearestSymbolFrom(call, call.getCalleeAttr());
    OpBuilder builder(call);
    auto lowered = func::CallOp::create(builder, call.getLoc(),
                                        declarations[kernel], call.getInputs());
    call.replaceAllUsesWith(lowered.getResults());
    call.erase();
    ++numCalls;
  }
  SmallVector<KernelOp> kernels;
  module.walk([&](KernelOp kernel) { kernels.push_back(kernel); });
  for (KernelOp kernel : kernels)
    kernel.erase();
}

} // namespace
