//===- Lower.cpp - kernel calls become calls of the kernel libraries ------===//
//
// The last DICE pass: what it leaves is plain func/linalg/tensor IR plus, on
// disk, what running that IR needs: the kernel libraries, the manifest the
// runtime loads them from (docs/runtime.md) and one C-interface trampoline
// per kernel that forwards the MLIR calling convention to dice_runtime_call.
//
//===----------------------------------------------------------------------===//

#include "KernelStore.h"

#include "dice/Dialect/Dice/DiceOps.h"
#include "dice/Runtime/Manifest.h"
#include "dice/Scaffold/ReferenceBuilder.h"
#include "dice/Transforms/Passes.h"
#include "dice/Transforms/Services.h"
#include "dice/VerifierCore/Verdict.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::dice {
#define GEN_PASS_DEF_DICELOWER
#include "dice/Transforms/Passes.h.inc"
} // namespace mlir::dice

using namespace mlir;
using namespace mlir::dice;

namespace {


/// The codes of DiceDType in include/dice/Runtime/DiceRuntime.h, which the
/// trampolines embed; ::dice::DType numbers dtypes the same way (checked by
/// a static_assert beside DType's definition).
int dtypeCode(::dice::DType dtype) { return static_cast<int>(dtype); }

/// Byte width of one element, for the trampoline's offset arithmetic.
int elementBytes(::dice::DType dtype) {
  switch (dtype) {
  case ::dice::DType::Float64:
  case ::dice::DType::Int64:
    return 8;
  case ::dice::DType::Float32:
  case ::dice::DType::Int32:
    return 4;
  case ::dice::DType::Float16:
  case ::dice::DType::BFloat16:
  case ::dice::DType::Int16:
    return 2;
  case ::dice::DType::Int8:
  case ::dice::DType::UInt8:
  case ::dice::DType::Bool:
    return 1;
  }
  return 1;
}

/// One tensor of a kernel signature, as the manifest and trampoline see it.
struct TensorSig {
  SmallVector<int64_t> shape; ///< ShapedType::kDynamic written as -1
  ::dice::DType dtype;
};

FailureOr<SmallVector<TensorSig>> signatureOf(KernelOp kernel, TypeRange types,
                                              StringRef what) {
  SmallVector<TensorSig> sigs;
  for (auto [i, type] : llvm::enumerate(types)) {
    auto tensor = cast<RankedTensorType>(type);
    std::optional<::dice::DType> dtype =
        ::dice::toDType(tensor.getElementType());
    if (!dtype)
      return kernel.emitOpError() << what << " #" << i << " has element type "
                                  << tensor.getElementType()
                                  << ", which the DICE runtime cannot pass";
    TensorSig sig{{}, *dtype};
    for (int64_t d : tensor.getShape())
      sig.shape.push_back(ShapedType::isDynamic(d) ? -1 : d);
    sigs.push_back(std::move(sig));
  }
  return sigs;
}

std::vector<::dice::ManifestTensor> manifestTensors(ArrayRef<TensorSig> sigs) {
  std::vector<::dice::ManifestTensor> out;
  for (const TensorSig &sig : sigs)
    out.push_back({std::vector<int64_t>(sig.shape.begin(), sig.shape.end()),
                   sig.dtype});
  return out;
}

/// The kernel's verdict in the verifier's own JSON (dice::Verdict), so the
/// manifest spells it as every other verdict is spelled.
std::string verdictJson(KernelOp kernel) {
  VerdictAttr attr = kernel.getVerdict();
  ::dice::Verdict verdict;
  static_cast<::dice::VerdictMeasurements &>(verdict) = attr.getMeasurements();
  verdict.fingerprint = kernel.getFingerprint().str();
  verdict.status = attr.getStatus();
  if (attr.getReason())
    verdict.reason = attr.getReason().getValue().str();
  return verdict.toJson();
}

/// The C struct of a rank-`rank` MLIR memref descriptor. Element pointers
/// are `void *`: the layout is the same for every element type.
std::string descriptorStruct(StringRef name, size_t rank) {
  std::string text = "typedef struct {\n  void *allocated;\n  void *aligned;\n"
                     "  int64_t offset;\n";
  if (rank)
    text +=
        llvm::formatv("  int64_t sizes[{0}];\n  int64_t strides[{0}];\n", rank)
            .str();
  return text + "} " + name.str() + ";\n";
}

/// The `_mlir_ciface_dice_k_<fp>` that `llvm.emit_c_interface` makes lowered
/// code call: results come first, through one pointer (a descriptor, or a
/// struct of descriptors when there are several), then one descriptor
/// pointer per input. Fingerprints, ranks and dtypes are fixed per kernel,
/// which is why this is generated rather than precompiled in the runtime.
std::string trampolineSource(StringRef fingerprint, StringRef manifestPath,
                             ArrayRef<TensorSig> inputs,
                             ArrayRef<TensorSig> results) {
  std::string symbol = ("dice_k_" + fingerprint).str();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "// The C interface of @" << symbol
     << ": MLIR memref descriptors in,\n"
        "// dice_runtime_call of kernel "
     << fingerprint
     << " (docs/runtime.md). Compile with\n"
        "// -DDICE_KERNEL_DEVICE=<n> when the memrefs live on CUDA device "
        "<n>.\n"
        "#include \"dice/Runtime/DiceRuntime.h\"\n\n"
        "#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n\n"
        "#ifndef DICE_KERNEL_DEVICE\n#define DICE_KERNEL_DEVICE "
        "DICE_DEVICE_CPU\n#endif\n\n";
  std::string manifestLiteral;
  llvm::raw_string_ostream(manifestLiteral) << '"';
  for (char c : manifestPath) {
    if (c == '"' || c == '\\')
      manifestLiteral += '\\';
    manifestLiteral += c;
  }
  manifestLiteral += '"';

  auto descName = [&](StringRef role, size_t i) {
    return llvm::formatv("{0}_{1}{2}", symbol, role, i).str();
  };
  for (auto [i, sig] : llvm::enumerate(inputs))
    os << descriptorStruct(descName("in", i), sig.shape.size());
  for (auto [i, sig] : llvm::enumerate(results))
    os << descriptorStruct(descName("out", i), sig.shape.size());
  std::string resultType;
  if (results.size() > 1) {
    os << "typedef struct {\n";
    for (size_t i = 0; i < results.size(); ++i)
      os << "  " << descName("out", i) << " r" << i << ";\n";
    os << "} " << symbol << "_results;\n";
    resultType = symbol + "_results";
  } else if (results.size() == 1) {
    resultType = descName("out", 0);
  }

  os << "\nvoid _mlir_ciface_" << symbol << "(";
  llvm::SmallVector<std::string> params;
  if (!results.empty())
    params.push_back(resultType + " *results");
  for (size_t i = 0; i < inputs.size(); ++i)
    params.push_back(llvm::formatv("{0} *a{1}", descName("in", i), i).str());
  if (params.empty())
    os << "void";
  os << llvm::join(params, ", ") << ") {\n";
  os << "  char error[1024];\n"
        "  const char *manifest = getenv(\"DICE_MANIFEST\");\n"
        "  if (dice_runtime_open(manifest ? manifest : "
     << manifestLiteral
     << ",\n"
        "                        error, sizeof error) != 0) {\n"
        "    fprintf(stderr, \"dice: %s\\n\", error);\n"
        "    abort();\n  }\n";

  // Ranks are fixed: the runtime reads and writes sizes and strides in the
  // descriptors' own arrays.
  auto entry = [&](StringRef desc, const TensorSig &sig, bool isInput) {
    std::string data =
        isInput ? llvm::formatv("(char *){0}aligned + {0}offset * {1}", desc,
                                elementBytes(sig.dtype))
                      .str()
                : "NULL";
    std::string dims = sig.shape.empty()
                           ? "NULL, NULL"
                           : llvm::formatv("{0}sizes, {0}strides", desc).str();
    return llvm::formatv("{{{0}, {1}, {2}, {3}, DICE_KERNEL_DEVICE}", data,
                         sig.shape.size(), dims, dtypeCode(sig.dtype))
        .str();
  };
  if (!inputs.empty()) {
    os << "  DiceMemRef inputs[" << inputs.size() << "] = {\n";
    for (auto [i, sig] : llvm::enumerate(inputs))
      os << "      " << entry(llvm::formatv("a{0}->", i).str(), sig, true)
         << ",\n";
    os << "  };\n";
  }
  auto resultDesc = [&](size_t i) {
    return results.size() == 1 ? std::string("results->")
                               : llvm::formatv("results->r{0}.", i).str();
  };
  if (!results.empty()) {
    os << "  DiceMemRef outputs[" << results.size() << "] = {\n";
    for (auto [i, sig] : llvm::enumerate(results))
      os << "      " << entry(resultDesc(i), sig, false) << ",\n";
    os << "  };\n";
  }
  // Host results of static shape are the caller's: allocated here with
  // malloc, contiguous, and filled by the runtime, so that MLIR's
  // deallocation (free of `allocated`) is right for them. Device results,
  // and results whose size only the kernel knows, stay the runtime's.
  bool anyOwned = llvm::any_of(results, [](const TensorSig &sig) {
    return !llvm::is_contained(sig.shape, -1);
  });
  if (anyOwned)
    os << "#if DICE_KERNEL_DEVICE == DICE_DEVICE_CPU\n";
  for (auto [i, sig] : llvm::enumerate(results)) {
    if (llvm::is_contained(sig.shape, -1))
      continue;
    std::string desc = resultDesc(i);
    int64_t stride = 1; // row-major; the element count at the end
    for (int64_t d = static_cast<int64_t>(sig.shape.size()) - 1; d >= 0; --d) {
      os << "  " << desc << "sizes[" << d << "] = " << sig.shape[d] << ";\n  "
         << desc << "strides[" << d << "] = " << stride << ";\n";
      stride *= sig.shape[d];
    }
    os << "  outputs[" << i << "].data = malloc("
       << std::max<int64_t>(1, stride * elementBytes(sig.dtype)) << ");\n"
       << "  if (!outputs[" << i << "].data) {\n"
       << "    fprintf(stderr, \"dice: out of memory for a result of "
       << fingerprint << "\\n\");\n    abort();\n  }\n";
  }
  if (anyOwned)
    os << "#endif\n";
  os << "  if (dice_runtime_call(\"" << fingerprint << "\", " << inputs.size()
     << ", " << (inputs.empty() ? "NULL" : "inputs") << ", " << results.size()
     << ", " << (results.empty() ? "NULL" : "outputs")
     << ", error,\n"
        "                        sizeof error) != 0) {\n"
        "    fprintf(stderr, \"dice: %s\\n\", error);\n"
        "    abort();\n  }\n";
  // The buffers malloc'd above, or the runtime's (dice_runtime_release).
  for (size_t i = 0; i < results.size(); ++i) {
    std::string desc = resultDesc(i);
    os << "  " << desc << "allocated = " << desc << "aligned = outputs[" << i
       << "].data;\n  " << desc << "offset = 0;\n";
  }
  os << "}\n";
  return text;
}

/// Writes a file through the driver's services.
LogicalResult writeArtifact(const DiceServices &services, StringRef path,
                            StringRef contents, std::string &error) {
  if (llvm::Error failed = services.writeArtifact(path, contents)) {
    error = llvm::toString(std::move(failed));
    return failure();
  }
  return success();
}

/// Copies `from` to `to` unless `to` already holds the same bytes.
LogicalResult copyArtifact(const DiceServices &services, StringRef from,
                           StringRef to, std::string &error) {
  auto source = llvm::MemoryBuffer::getFile(from, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!source) {
    error = "cannot read artifact '" + from.str() +
            "': " + source.getError().message();
    return failure();
  }
  if (auto existing = llvm::MemoryBuffer::getFile(
          to, /*IsText=*/false, /*RequiresNullTerminator=*/false);
      existing && (*existing)->getBuffer() == (*source)->getBuffer())
    return success();
  // A library that a running process has mapped must not change under it:
  // the rename gives the new bytes a new inode.
  return writeArtifact(services, to, (*source)->getBuffer(), error);
}

/// The manifest already in the artifacts directory, or an empty one. A
/// manifest that cannot be read is an error at the manifest's own line.
FailureOr<::dice::Manifest> existingManifest(MLIRContext *context,
                                             StringRef path) {
  if (!llvm::sys::fs::exists(path))
    return ::dice::Manifest();
  ::dice::Result<::dice::Manifest> manifest =
      ::dice::readManifest(path.str());
  if (!manifest) {
    const ::dice::Error &error = manifest.error();
    Location loc = FileLineColLoc::get(context, path, error.line, error.column);
    InFlightDiagnostic diag = emitError(loc)
                              << "dice-lower: cannot merge into this manifest: ";
    if (!error.key.empty())
      diag << error.key << ": ";
    return diag << error.message;
  }
  return manifest.take();
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
  StringRef fp = kernel.getFingerprint();
  std::optional<StringRef> artifact = kernel.getArtifact();
  if (!artifact)
    return kernel.emitOpError()
           << "is called but has no artifact; dice-lower needs the built "
              "kernel library";
  if (!llvm::sys::fs::is_regular_file(*artifact))
    return kernel.emitOpError()
           << "artifact '" << *artifact << "' does not exist or is not a file";

  FunctionType type = kernel.getFunctionType();
  FailureOr<SmallVector<TensorSig>> inputs =
      signatureOf(kernel, type.getInputs(), "input");
  FailureOr<SmallVector<TensorSig>> results =
      signatureOf(kernel, type.getResults(), "result");
  if (failed(inputs) || failed(results))
    return failure();

  std::string library = ("k_" + fp + ".so").str();
  SmallString<256> libraryPath(dir);
  llvm::sys::path::append(libraryPath, library);
  SmallString<256> trampolinePath(dir);
  llvm::sys::path::append(trampolinePath, "k_" + fp + ".ciface.c");
  std::string error;
  const DiceServices &services = getDiceServices(&getContext());
  if (failed(copyArtifact(services, *artifact, libraryPath, error)) ||
      failed(writeArtifact(
          services, trampolinePath,
          trampolineSource(fp, manifestPath, *inputs, *results), error)))
    return kernel.emitOpError() << error;

  ++numKernels;
  ::dice::ManifestKernel entry;
  entry.library = library;
  entry.operatorName = ("dice::k_" + fp).str();
  entry.symbol = ("dice_k_" + fp).str();
  entry.inputs = manifestTensors(*inputs);
  entry.results = manifestTensors(*results);
  entry.verdictJson = verdictJson(kernel);
  return entry;
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
    if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
      emitError(module.getLoc())
          << "dice-lower: cannot create artifacts directory '" << dir
          << "': " << ec.message();
      return signalPassFailure();
    }
    // Trampolines open the manifest wherever the program runs from.
    SmallString<256> manifestPath(dir);
    llvm::sys::fs::make_absolute(manifestPath);
    llvm::sys::path::remove_dots(manifestPath, /*remove_dot_dot=*/true);
    llvm::sys::path::append(manifestPath, "manifest.json");

    llvm::MapVector<StringRef, ::dice::ManifestKernel> entries;
    bool failedAny = false;
    for (KernelOp kernel : used) {
      FailureOr<::dice::ManifestKernel> entry =
          writeKernel(kernel, dir, manifestPath);
      if (failed(entry))
        failedAny = true;
      else
        entries.insert({kernel.getFingerprint(), std::move(*entry)});
    }
    if (failedAny)
      return signalPassFailure();

    // Lowerings that share the directory merge one at a time; the lock is
    // a file of its own because the manifest is replaced by renames.
    std::string error;
    std::error_code ec;
    llvm::raw_fd_ostream lockFile((manifestPath + ".lock").str(), ec,
                                  llvm::sys::fs::OF_Append);
    if (ec) {
      emitError(module.getLoc()) << "dice-lower: cannot open '" << manifestPath
                                 << ".lock': " << ec.message();
      return signalPassFailure();
    }
    llvm::Expected<llvm::sys::fs::FileLocker> lock = lockFile.lock();
    if (!lock) {
      emitError(module.getLoc())
          << "dice-lower: cannot lock '" << manifestPath
          << ".lock': " << llvm::toString(lock.takeError());
      return signalPassFailure();
    }
    FailureOr<::dice::Manifest> manifest =
        existingManifest(&getContext(), manifestPath);
    if (failed(manifest))
      return signalPassFailure();
    {
      for (auto &[fp, entry] : entries)
        manifest->kernels[fp.str()] = std::move(entry);
      ::dice::Result<std::string> text = ::dice::printManifest(*manifest);
      if (!text)
        error = text.error().format();
      else
        (void)writeArtifact(getDiceServices(&getContext()), manifestPath,
                            *text, error);
    }
    if (!error.empty()) {
      emitError(module.getLoc()) << "dice-lower: " << error;
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
