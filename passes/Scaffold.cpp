//===- Scaffold.cpp - attach the DICE scaffold to kernel requests ---------===//

#include "dice/Scaffold/Scaffold.h"
#include "dice/Dialect/Dice/DiceOps.h"
#include "dice/Reference/ReferenceBuilder.h"
#include "dice/Transforms/Passes.h"

#include "KernelStore.h"

#include <memory>

namespace mlir::dice {
#define GEN_PASS_DEF_DICESCAFFOLD
#include "dice/Transforms/Passes.h.inc"
} // namespace mlir::dice

using namespace mlir;
using namespace mlir::dice;

namespace {

struct ScaffoldPass : public mlir::dice::impl::DiceScaffoldBase<ScaffoldPass> {
  using Base::Base;

  // dice.toml's prompt templates, read once for every function.
  LogicalResult initialize(MLIRContext *context) override {
    if (configFile.empty())
      return success();
    FailureOr<::dice::Config> config = loadPassConfig(context, configFile);
    if (failed(config))
      return failure();
    ::dice::Result<::dice::PromptTemplates> loaded =
        ::dice::PromptTemplates::load(config->promptInfill, config->promptEndToEnd);
    if (!loaded)
      return emitAtErrorLocation(context, loaded.error());
    templates = std::make_shared<const ::dice::PromptTemplates>(loaded.take());
    return success();
  }

  void runOnOperation() override {
    const ::dice::PromptTemplates &words =
        templates ? *templates : ::dice::PromptTemplates::builtin();
    WalkResult result = getOperation().walk([&](KernelRequestOp request) {
      // A scaffold is a function of the request's body and the templates
      // alone: one written by an earlier run with these templates stays
      // (the torch.compile backend scaffolds a graph to time its
      // partitions, then hands that IR to the pipeline).
      if (ScaffoldAttr done = request.getScaffoldAttr();
          done && done.getPromptTemplate() == words.identity)
        return WalkResult::advance();
      std::string whyNot;
      std::optional<::dice::ReferenceProgram> program =
          ::dice::buildReferenceProgram(request.getBody(), whyNot);
      if (!program) {
        request.emitOpError() << "cannot render its reference program: "
                              << whyNot;
        return WalkResult::interrupt();
      }
      ::dice::ScaffoldText text =
          ::dice::renderScaffold(*program, request.getFingerprint().str(), words);
      // Checked: the attribute's verifier reads the program back, so a
      // program its JSON does not carry whole is an error here, at the
      // request, and never an attribute that later readers half-parse.
      std::string json = program->toJson();
      ScaffoldAttr scaffold = ScaffoldAttr::getChecked(
          [&] { return request.emitOpError(); }, request.getContext(),
          StringRef(json), StringRef(text.reference), StringRef(text.prefix),
          StringRef(text.suffix), StringRef(text.signature),
          StringRef(text.infillPrompt), StringRef(text.endToEndPrompt),
          StringRef(words.identity));
      if (!scaffold)
        return WalkResult::interrupt();
      request.setScaffoldAttr(scaffold);
      ++numScaffolded;
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }

  std::shared_ptr<const ::dice::PromptTemplates> templates;
};

} // namespace
