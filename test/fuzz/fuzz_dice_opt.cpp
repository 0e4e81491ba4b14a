//===- fuzz_dice_opt.cpp - dice-opt's parsing and the dice passes ---------===//
//
// What dice-opt does with a file: parse it (ops of unknown dialects
// allowed, as dice-opt allows them), verify it, and run the dice pipeline at
// each granularity. Properties:
//  - a pass that fails has said why (an error diagnostic), never crashed;
//  - the pipeline's output verifies;
//  - with no engine, no request gets a kernel, so the output is the input's
//    own round trip byte for byte: the guarantee of every fallback
//    (test/Tools/dice-opt/fallback-identity.test states it for the exported
//    models; here it is asked of any module that parses).
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"

#include "dice/Driver/ParseGuard.h"
#include "dice/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace {

std::string print(mlir::Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  op->print(os);
  return text;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  mlir::dice::registerDicePasses();
  mlir::dice::registerDicePipeline();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::DialectRegistry registry;
  mlir::dice::registerDiceDialects(registry);
  // One thread: libFuzzer and the replay driver fork, and a worker pool
  // would outlive neither cleanly; the passes' results do not depend on it.
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  context.allowUnregisteredDialects();
  unsigned errors = 0;
  std::string lastError;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error) {
      ++errors;
      lastError = d.str();
    }
    return mlir::success();
  });

  // As dice-opt reads a file: ending in the NUL MLIR's lexer takes for the
  // end, and tried in a child process first (ParseGuard.h), since some of
  // MLIR's own op parsers crash on malformed syntax. dice-opt then stops
  // with the errors the parser gave before it died.
  std::string text(reinterpret_cast<const char *>(data), size);
  if (std::optional<mlir::dice::ParserCrash> crash =
          mlir::dice::findParserCrash(text, "fuzz.mlir", registry)) {
    DICE_FUZZ_CHECK(crash->diagnostics.find("error: ") != std::string::npos,
                    "the parser crashed without an error first");
    return 0;
  }
  // The buffer dice-opt parses: a MemoryBuffer of the bytes and a NUL.
  // (MLIR's lexer reads a little past the end of some unterminated tokens,
  // which such a buffer's allocation absorbs, but a std::string that ends
  // at a page boundary does not: the trial parse above runs on the same
  // kind of buffer and would report a crash.)
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, "fuzz.mlir"),
                               llvm::SMLoc());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module) {
    DICE_FUZZ_CHECK(errors > 0, "a rejected input must get an error");
    return 0;
  }
  std::string plain = print(module.get());

  dice::fuzz::ScratchDir scratch;
  for (const char *granularity : {"op", "fusion", "function"}) {
    mlir::OwningOpRef<mlir::ModuleOp> copy = module->clone();
    mlir::PassManager pm(&context);
    std::string pipeline = std::string("dice-pipeline{engine=none granularity=") +
                           granularity + " db=" + scratch.path() + "/kernels.db" +
                           " artifacts=" + scratch.path() + "/artifacts}";
    std::string pipelineError;
    llvm::raw_string_ostream pipelineErrors(pipelineError);
    DICE_FUZZ_CHECK(mlir::succeeded(mlir::parsePassPipeline(pipeline, pm,
                                                            pipelineErrors)),
                    pipelineError);
    unsigned before = errors;
    if (mlir::failed(pm.run(copy.get()))) {
      DICE_FUZZ_CHECK(errors > before,
                      std::string("the pipeline failed without an error at ") +
                          granularity);
      continue;
    }
    DICE_FUZZ_CHECK(mlir::succeeded(mlir::verify(copy.get())),
                    std::string("the pipeline's output does not verify at ") +
                        granularity + ": " + lastError);
    std::string out = print(copy.get());
    DICE_FUZZ_CHECK(out == plain,
                    std::string("with no kernel the output differs from the "
                                "input at ") +
                        granularity + "\n--- input\n" + plain + "--- output\n" + out);
  }
  return 0;
}
