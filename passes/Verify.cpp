//===- Verify.cpp - verify every candidate of every request ---------------===//

#include "KernelStore.h"

#include "dice/Driver/Services.h"
#include "dice/Runtime/Artifacts.h"
#include "dice/Transforms/Passes.h"
#include "dice/Verifier/CandidateVerifier.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"

#include <map>
#include <thread>

namespace mlir::dice {
#define GEN_PASS_DEF_DICEVERIFY
#include "dice/Transforms/Passes.h.inc"
} // namespace mlir::dice

using namespace mlir;
using namespace mlir::dice;

namespace {

/// One candidate sent to the verifier, and where its verdict goes.
struct Slot {
  KernelRequestOp request;
  unsigned index;
};

/// A verdict on its way to the kernel database, with the library it built.
struct PendingRecord {
  ::dice::CandidateRecord record;
  std::string artifactPath; ///< empty when nothing was built
};

/// Stores a request's candidates in one transaction: infill takes what a key
/// holds as the request's whole answer, so another process, or the next run
/// after this one is killed, must never find some of them. The libraries are
/// read here, one request at a time, so a run holds at most one request's.
LogicalResult storeRequest(::dice::KernelStore &db, KernelRequestOp request,
                           std::vector<PendingRecord> &pending) {
  std::vector<::dice::CandidateRecord> records;
  records.reserve(pending.size());
  for (PendingRecord &p : pending) {
    if (!p.artifactPath.empty()) {
      ::dice::Result<std::vector<uint8_t>> bytes =
          ::dice::readKernelLibrary(p.artifactPath);
      if (!bytes)
        return request.emitOpError() << bytes.error().describe();
      p.record.artifact = bytes.take();
    }
    records.push_back(std::move(p.record));
  }
  if (::dice::Status stored = db.putAll(kernelKeyOf(request), records);
      !stored)
    return request.emitError()
           << "kernel database " << stored.error().describe();
  return success();
}

struct VerifyPass : public mlir::dice::impl::DiceVerifyBase<VerifyPass> {
  using Base::Base;

  void runOnOperation() override;

private:
  ::dice::CandidateVerifierOptions
  verifierOptions(const ::dice::Config &config, const DiceServices &services,
                  StringRef gpuArch) const;
};

::dice::CandidateVerifierOptions
VerifyPass::verifierOptions(const ::dice::Config &config,
                            const DiceServices &services,
                            StringRef gpuArch) const {
  std::string artifactDir =
      artifacts.empty() ? config.artifactDir : std::string(artifacts);
  ::dice::CandidateVerifierOptions options;
  // Built libraries live beside the other artifacts, so a rebuild of the
  // same source is a cache hit.
  options.build = ::dice::defaultKernelBuildOptions(artifactDir);
  options.build.gpuArch = gpuArch.str();
  if (!nvcc.empty())
    options.build.nvccPath = nvcc;
  options.checks = config.verifier;
  options.jobs = jobs ? jobs : std::max(1u, std::thread::hardware_concurrency());
  options.staticAnalysis = staticAnalysis;
  options.workerPath = ::dice::defaultWorkerPath();
  options.scratchDir = artifactDir + "/workers";
  options.progress = [&services](const char *stage, size_t done,
                                 size_t total) {
    services.progress(llvm::Twine("dice-verify: ") + stage + " " +
                       llvm::Twine(done) + "/" + llvm::Twine(total) +
                       (llvm::StringRef(stage) == "built"
                            ? " kernel libraries"
                            : " candidates on the GPU"));
  };
  return options;
}

void VerifyPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = &getContext();
  FailureOr<::dice::Config> config = loadPassConfig(module, configFile);
  if (failed(config))
    return signalPassFailure();
  const DiceServices &services = getDiceServices(ctx);

  // A stored `unverified` says this machine could not run the candidate;
  // one with a GPU may.
  std::optional<bool> device;
  // A measured time (Inductor's, or eager PyTorch's) is measured anew by
  // each compile (on this GPU, for this graph): a stored verdict timed
  // against another is no answer.
  bool retime = config->verifier.baseline != ::dice::Baseline::Eager;
  auto needsVerdict = [&](CandidateAttr candidate) {
    if (!candidate.getVerdict())
      return true;
    VerdictStatus status = candidate.getVerdict().getStatus();
    if (retime && (status == VerdictStatus::Accepted || status == VerdictStatus::Slow))
      return true;
    if (status != VerdictStatus::Unverified)
      return false;
    if (!device)
      device = ::dice::haveCudaDevice();
    return *device;
  };

  // All candidates of all requests in one batch per GPU architecture, so
  // builds and workers run in parallel across requests.
  std::map<std::string, std::vector<Slot>> batches;
  std::map<std::string, std::vector<::dice::VerificationRequest>> inputs;
  module.walk([&](KernelRequestOp request) {
    ArrayAttr candidates = request.getCandidatesAttr();
    if (!candidates)
      return;
    ScaffoldAttr scaffold = request.getScaffoldAttr();
    std::string arch = request.getGpuArch()->str();
    for (auto [i, attr] : llvm::enumerate(candidates)) {
      auto candidate = llvm::cast<CandidateAttr>(attr);
      if (!needsVerdict(candidate)) {
        ++numKept;
        continue;
      }
      ::dice::VerificationRequest input;
      input.name = request.getKernelSymbolName() + "#" + std::to_string(i);
      input.fingerprint = request.getFingerprint().str();
      input.signature = scaffold.getSignature().str();
      input.programJson = scaffold.getProgram().str();
      input.text = candidate.getVerifiedText().str();
      input.isCudaSource = static_cast<bool>(candidate.getSource());
      inputs[arch].push_back(std::move(input));
      batches[arch].push_back({request, static_cast<unsigned>(i)});
    }
  });
  if (batches.empty())
    return;

  std::shared_ptr<::dice::KernelStore> db =
      openKernelStore(module, database, *config);
  if (!db)
    return signalPassFailure();

  std::vector<std::string> notes;
  bool stored = true;
  for (auto &[arch, slots] : batches) {
    llvm::MapVector<KernelRequestOp, std::vector<PendingRecord>> verdicts;
    std::unique_ptr<::dice::CandidateVerifier> verifier =
        services.createVerifier(verifierOptions(*config, services, arch));
    auto start = std::chrono::steady_clock::now();
    services.progress("dice-verify: " + llvm::Twine(inputs[arch].size()) +
                   " candidates for " + arch);
    std::vector<::dice::VerificationResult> results =
        verifier->verify(inputs[arch]);
    services.progress("dice-verify: " + llvm::Twine(results.size()) +
                   " verdicts in " + formatSeconds(start));
    for (std::string &note : verifier->takeNotes())
      if (!llvm::is_contained(notes, note))
        notes.push_back(std::move(note));
    numVerified += results.size();

    for (auto [slot, result, input] :
         llvm::zip_equal(slots, results, inputs[arch])) {
      KernelRequestOp request = slot.request;
      SmallVector<Attribute> candidates(request.getCandidatesAttr().getValue());
      auto old = llvm::cast<CandidateAttr>(candidates[slot.index]);
      StringAttr source = result.cudaSource.empty()
                              ? old.getSource()
                              : StringAttr::get(ctx, result.cudaSource);
      StringAttr artifact = result.artifactPath.empty()
                                ? StringAttr()
                                : StringAttr::get(ctx, result.artifactPath);
      candidates[slot.index] =
          CandidateAttr::get(ctx, old.getAnswer(), source,
                             toVerdictAttr(ctx, result.verdict), artifact);
      request.setCandidatesAttr(ArrayAttr::get(ctx, candidates));

      PendingRecord &pending = verdicts[request].emplace_back();
      ::dice::CandidateRecord &record = pending.record;
      record.candidateHash = result.verdict.candidateHash;
      // What the hash is of: the extracted source, or the answer that had
      // none.
      record.source = result.cudaSource.empty() ? input.text : result.cudaSource;
      record.verdictJson = result.verdict.toJson();
      record.status = result.verdict.status;
      record.speedup = result.verdict.speedup;
      pending.artifactPath = result.artifactPath;
    }
    // A request's candidates all go to one architecture's batch; one
    // request that cannot be stored does not cost the others theirs.
    for (auto &[request, pending] : verdicts) {
      stored &= succeeded(storeRequest(*db, request, pending));
      pending.clear();
    }
  }
  if (!stored)
    return signalPassFailure();

  // Said once for the run, not once per request: these hold for every
  // candidate alike.
  if (!notes.empty())
    module.emitRemark() << "dice-verify: " << llvm::join(notes, "; ");
}

} // namespace
