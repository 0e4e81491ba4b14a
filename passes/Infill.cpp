//===- Infill.cpp - attach candidate kernels to kernel requests -----------===//

#include "KernelStore.h"

#include "dice/Driver/Services.h"
#include "dice/Infill/EngineFactory.h"
#include "dice/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::dice {
#define GEN_PASS_DEF_DICEINFILL
#include "dice/Transforms/Passes.h.inc"
} // namespace mlir::dice

using namespace mlir;
using namespace mlir::dice;

namespace {

/// A stored record as a candidate: the database keeps the CUDA source, the
/// verdict JSON and whether a library was built (the bytes stay there).
FailureOr<CandidateAttr> fromRecord(KernelRequestOp request,
                                    const ::dice::CandidateRecord &record,
                                    StringRef databasePath) {
  MLIRContext *ctx = request.getContext();
  ::dice::Result<::dice::Verdict> verdict =
      ::dice::Verdict::fromJson(record.verdictJson);
  if (!verdict)
    return request.emitOpError()
           << "kernel database " << databasePath << " holds candidate "
           << record.candidateHash << " with an unreadable verdict: "
           << verdict.error().message;
  return CandidateAttr::get(ctx, StringAttr(),
                            StringAttr::get(ctx, record.source),
                            toVerdictAttr(ctx, *verdict), StringAttr());
}

std::string candidatesText(size_t n) {
  return std::to_string(n) + (n == 1 ? " candidate" : " candidates");
}

struct InfillPass : public mlir::dice::impl::DiceInfillBase<InfillPass> {
  using Base::Base;

  void runOnOperation() override;
};

void InfillPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = &getContext();
  FailureOr<::dice::Config> loaded = loadPassConfig(module, configFile);
  if (failed(loaded))
    return signalPassFailure();
  const ::dice::Config &config = *loaded;

  ::dice::Result<::dice::EngineSpec> spec =
      ::dice::parseEngineSpec(engine, config);
  if (!spec) {
    module.emitError() << spec.error().describe();
    return signalPassFailure();
  }

  SmallVector<KernelRequestOp> requests;
  bool missingScaffold = false;
  module.walk([&](KernelRequestOp request) {
    if (request.getCandidatesAttr())
      return; // already infilled: the pass is idempotent
    if (!request.getScaffoldAttr()) {
      request.emitOpError()
          << "has no scaffold; run dice-scaffold before dice-infill";
      missingScaffold = true;
      return;
    }
    requests.push_back(request);
  });
  if (missingScaffold)
    return signalPassFailure();
  if (requests.empty())
    return;

  std::shared_ptr<::dice::KernelStore> db =
      openKernelStore(module, database, config);
  if (!db)
    return signalPassFailure();
  const DiceServices &services = getDiceServices(ctx);

  // Loaded on the first database miss: a warm database needs no model.
  std::unique_ptr<::dice::InfillEngine> loadedEngine;
  auto getEngine = [&]() -> ::dice::InfillEngine * {
    if (!loadedEngine) {
      auto start = std::chrono::steady_clock::now();
      ::dice::Result<std::unique_ptr<::dice::InfillEngine>> created =
          services.createInfillEngine(*spec);
      if (!created) {
        module.emitError() << "cannot create infill engine '" << engine
                           << "': " << created.error().describe();
        return nullptr;
      }
      loadedEngine = created.take();
      services.progress("dice-infill: loaded " + loadedEngine->name() + " in " +
                        formatSeconds(start));
    }
    return loadedEngine.get();
  };

  ::dice::SamplingConfig sampling = config.sampling;
  if (candidates > 0)
    sampling.candidates = candidates;

  for (auto [index, request] : llvm::enumerate(requests)) {
    std::string where = "dice-infill: [" + std::to_string(index + 1) + "/" +
                        std::to_string(requests.size()) + "] " +
                        request.getKernelSymbolName() + ": ";
    request.setModelAttr(StringAttr::get(ctx, spec->modelId));
    request.setGpuArchAttr(StringAttr::get(ctx, gpuArch));
    ::dice::KernelKey key = kernelKeyOf(request);

    SmallVector<Attribute> attached;
    ::dice::Result<std::vector<::dice::CandidateRecord>> stored =
        db->candidates(key);
    if (!stored) {
      module.emitError() << "kernel database " << stored.error().describe();
      return signalPassFailure();
    }
    if (!stored->empty()) {
      for (const ::dice::CandidateRecord &record : *stored) {
        FailureOr<CandidateAttr> candidate =
            fromRecord(request, record, db->path());
        if (failed(candidate))
          return signalPassFailure();
        attached.push_back(*candidate);
      }
      ++numDatabaseHits;
      services.progress(where + candidatesText(attached.size()) +
                     " from the kernel database");
    } else {
      ::dice::InfillEngine *filler = getEngine();
      if (!filler)
        return signalPassFailure();
      auto start = std::chrono::steady_clock::now();
      ::dice::Result<std::vector<::dice::Candidate>> answers =
          filler->generateCandidates(
              ::dice::InfillRequest{
                  key.fingerprint,
                  request.getScaffoldAttr().getInfillPrompt().str()},
              static_cast<int>(sampling.candidates), sampling);
      if (!answers) {
        request.emitOpError() << "infill engine '" << filler->name()
                              << "' failed: " << answers.error().describe();
        return signalPassFailure();
      }
      for (const ::dice::Candidate &answer : *answers) {
        StringAttr text = StringAttr::get(ctx, answer.text);
        attached.push_back(answer.isCudaSource
                               ? CandidateAttr::get(ctx, StringAttr(), text,
                                                    VerdictAttr(), StringAttr())
                               : CandidateAttr::get(ctx, text, StringAttr(),
                                                    VerdictAttr(), StringAttr()));
      }
      services.progress(where + candidatesText(attached.size()) + " from " +
                     filler->name() + " in " + formatSeconds(start));
    }
    request.setCandidatesAttr(ArrayAttr::get(ctx, attached));
    ++numRequests;
    numCandidates += attached.size();
  }
}

} // namespace
