//===- Resolve.cpp - use the best kernel of each request, or inline back --===//

#include "KernelStore.h"
#include "Report.h"

#include "dice/Driver/Services.h"
#include "dice/Runtime/Artifacts.h"
#include "dice/Support/Sha256.h"
#include "dice/Transforms/Passes.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

namespace mlir::dice {
#define GEN_PASS_DEF_DICERESOLVE
#include "dice/Transforms/Passes.h.inc"
} // namespace mlir::dice

using namespace mlir;
using namespace mlir::dice;

namespace {

/// Why no kernel was used, in the words of the remark, and which statistic
/// counts it.
enum class Fallback { NoCandidates, AllFailed, TooSlow, Unverified };

/// The first line of a verifier reason, short enough for a remark.
std::string firstLine(StringRef reason) {
  StringRef line = reason.split('\n').first.trim();
  if (line.size() > 120)
    return (line.take_front(117) + "...").str();
  return line.str();
}

std::string formatSpeedup(double speedup) {
  std::string text;
  // Two significant digits for very slow candidates rather than "0.00x".
  llvm::raw_string_ostream(text)
      << llvm::format(speedup >= 0.1 ? "%.2fx" : "%.2gx", speedup);
  return text;
}

/// One candidate of the JSON report: the hash the kernel database files it
/// under (of its source, or of the answer that had none), its status and
/// whole verdict (JSON, as the database keeps it), answer, source and
/// library.
llvm::json::Value candidateJson(KernelRequestOp request,
                                CandidateAttr candidate) {
  // Copied: the report outlives the context that owns the attributes.
  auto text = [](StringAttr attr) -> llvm::json::Value {
    return attr ? llvm::json::Value(attr.getValue().str()) : nullptr;
  };
  llvm::json::Object object;
  std::string hash = ::dice::sha256Hex(candidate.getVerifiedText().str());
  object["candidate_hash"] = hash;
  object["status"] = nullptr;
  object["verdict"] = nullptr;
  if (VerdictAttr attr = candidate.getVerdict()) {
    ::dice::Verdict verdict = fromVerdictAttr(attr);
    verdict.fingerprint = request.getFingerprint().str();
    verdict.candidateHash = hash;
    object["status"] = std::string(::dice::verdictStatusName(verdict.status));
    // toJson's own text, so the report spells every value (non-finite
    // errors included) as the verdict JSON does.
    llvm::Expected<llvm::json::Value> parsed =
        llvm::json::parse(verdict.toJson());
    if (parsed)
      object["verdict"] = std::move(*parsed);
    else
      llvm::consumeError(parsed.takeError());
  }
  object["answer"] = text(candidate.getAnswer());
  object["source"] = text(candidate.getSource());
  object["artifact"] = text(candidate.getArtifact());
  return object;
}

std::optional<int64_t> positionOf(Operation *op) {
  if (auto position =
          op->getAttrOfType<IntegerAttr>(DiceDialect::kPositionAttrName))
    return position.getInt();
  return std::nullopt;
}

/// Puts the ops of `block` back in their order before dice-outline (where
/// every request fell back, exactly the input's order) and drops the
/// positions. A kernel call stands where its request's first op stood, or
/// right after the last op it reads when that stood later (a weight that
/// dice-outline moved above the request); an op without a position stays
/// behind its predecessor.
void restoreOriginalOrder(Block &block) {
  // (position, 1 if moved down behind an operand), computed in the block's
  // current order, which is topological: operands' keys are known.
  llvm::DenseMap<Operation *, std::pair<int64_t, int>> keys;
  SmallVector<Operation *> ops;
  std::pair<int64_t, int> previous = {-1, 0};
  for (Operation &op : block) {
    std::pair<int64_t, int> key = previous;
    if (std::optional<int64_t> position = positionOf(&op))
      key = {*position, 0};
    for (Value operand : op.getOperands())
      if (Operation *def = operand.getDefiningOp();
          def && def->getBlock() == &block && keys.lookup(def).first >= key.first)
        key = {keys.lookup(def).first, 1};
    keys[&op] = previous = key;
    ops.push_back(&op);
  }
  llvm::stable_sort(ops, [&](Operation *a, Operation *b) {
    return keys[a] < keys[b];
  });
  for (Operation *op : ops) {
    op->moveBefore(&block, block.end());
    op->removeAttr(DiceDialect::kPositionAttrName);
  }
  // A safety net: a no-op for what dice-outline produced.
  sortTopologically(&block);
}

/// Writes the stored library of a candidate to `<dir>/db/<hash>.so` (left
/// alone when it holds those bytes already) and returns the path; a null
/// attribute when the store has no library for it.
llvm::Expected<StringAttr> storedArtifact(MLIRContext *ctx,
                                          const ::dice::KernelStore &store,
                                          const ::dice::KernelKey &key,
                                          const std::string &hash,
                                          StringRef dir) {
  auto bytes = store.artifact(key, hash);
  if (!bytes)
    return llvm::createStringError(bytes.error().describe());
  if (!*bytes)
    return StringAttr();
  ::dice::Result<std::string> path = ::dice::placeStoredLibrary(
      dir.str(), hash, **bytes, getDiceServices(ctx).artifactWriter());
  if (!path)
    return llvm::createStringError(path.error().describe());
  return StringAttr::get(ctx, *path);
}

struct ResolvePass : public mlir::dice::impl::DiceResolveBase<ResolvePass> {
  using Base::Base;

  void runOnOperation() override;

private:
  /// Replaces `request` by a call of its kernel (created once per
  /// fingerprint).
  void useKernel(KernelRequestOp request, CandidateAttr chosen);
  /// Puts the request's ops back where the request was.
  void inlineBack(KernelRequestOp request);
  /// Undoes dice-outline's rematerialization of a producer: keeps one of the
  /// ops that share its position (clones of one op, now equal again).
  void unrematerialize(Operation *op);
  /// The same for IR without positions (written by hand or by another
  /// tool): reuses an equal constant before the request, or moves it up
  /// among the constants that start the block.
  void unrematerializeConstant(Operation *constant, Operation *request);

  OpBuilder::InsertPoint kernelInsertPoint;
  /// The last constant moved to the start of each block, so several keep
  /// their order of first use.
  llvm::DenseMap<Block *, Operation *> lastHoisted;
  /// For each block, the op kept for each position.
  llvm::DenseMap<Block *, llvm::DenseMap<int64_t, Operation *>> byPosition;
  std::map<std::string, KernelOp> kernels;
};

void ResolvePass::useKernel(KernelRequestOp request, CandidateAttr chosen) {
  std::string symbol = request.getKernelSymbolName();
  KernelOp &kernel = kernels[symbol];
  ModuleOp module = getOperation();
  if (!kernel) {
    if (Operation *existing = module.lookupSymbol(symbol)) {
      kernel = llvm::dyn_cast<KernelOp>(existing);
    } else {
      // Kernels go to the top of the module, in the order of their requests.
      OpBuilder builder(&getContext());
      if (kernelInsertPoint.isSet())
        builder.restoreInsertionPoint(kernelInsertPoint);
      else
        builder.setInsertionPointToStart(module.getBody());
      kernel = KernelOp::create(
          builder, request.getLoc(), symbol,
          builder.getFunctionType(request.getInputs().getTypes(),
                                  request.getResultTypes()),
          chosen.getVerdict(), chosen.getSource(), chosen.getArtifact());
      kernelInsertPoint = builder.saveInsertionPoint();
    }
  }
  OpBuilder builder(request);
  auto call = CallOp::create(builder, request.getLoc(),
                             request.getResultTypes(),
                             FlatSymbolRefAttr::get(kernel.getSymNameAttr()),
                             request.getInputs());
  // The call stands where the request's first op stood.
  if (Attribute position = request->getAttr(DiceDialect::kPositionAttrName))
    call->setAttr(DiceDialect::kPositionAttrName, position);
  request.replaceAllUsesWith(call.getResults());
  request.erase();
}

void ResolvePass::unrematerialize(Operation *op) {
  auto [slot, inserted] =
      byPosition[op->getBlock()].try_emplace(*positionOf(op), op);
  if (inserted || slot->second == op)
    return;
  // Its producers are merged already (they come first), so a clone reads
  // exactly what the kept op reads.
  // A tensor.empty of a dynamic shape was sized inside the request from
  // an operand (dice-outline); its original made the same tensor.
  bool sameEmpty = isa<tensor::EmptyOp>(op) && isa<tensor::EmptyOp>(slot->second) &&
                   op->getResultTypes() == slot->second->getResultTypes();
  // A size it read again inside the request stands for the function's.
  bool sameSize = op->getNumResults() == 1 && slot->second->getNumResults() == 1 &&
                  op->getResult(0).getType().isIndex() &&
                  slot->second->getResult(0).getType().isIndex();
  if (!sameEmpty && !sameSize && !OperationEquivalence::isEquivalentTo(
                        slot->second, op, OperationEquivalence::IgnoreLocations))
    return;
  op->replaceAllUsesWith(slot->second);
  op->erase();
}

void ResolvePass::unrematerializeConstant(Operation *constant,
                                          Operation *request) {
  Block *block = request->getBlock();
  for (Operation &op : *block) {
    if (&op == request)
      break;
    if (&op != constant && op.getName() == constant->getName() &&
        op.getAttrDictionary() == constant->getAttrDictionary() &&
        op.getResultTypes() == constant->getResultTypes()) {
      constant->replaceAllUsesWith(&op);
      constant->erase();
      return;
    }
  }
  if (!constant->hasTrait<OpTrait::ConstantLike>())
    return;
  // torch-mlir puts a function's constants first; dice-outline erased the
  // original once every use had moved into requests.
  auto it = lastHoisted.find(block);
  if (it != lastHoisted.end())
    constant->moveAfter(it->second);
  else
    constant->moveBefore(block, block->begin());
  lastHoisted[block] = constant;
}

void ResolvePass::inlineBack(KernelRequestOp request) {
  Block &body = request.getBody().front();
  YieldOp yield = request.getYield();
  for (auto [arg, input] :
       llvm::zip_equal(body.getArguments(), request.getInputs()))
    arg.replaceAllUsesWith(input);
  request.replaceAllUsesWith(yield.getValues());
  // A scalar argument the request took as a 0-d tensor is read as itself
  // again, and its wrapper goes once no request reads it.
  llvm::SmallSetVector<Operation *, 2> wraps;
  for (Operation &op : llvm::make_early_inc_range(body.without_terminator())) {
    auto extract = dyn_cast<tensor::ExtractOp>(op);
    auto wrap = extract && extract.getIndices().empty()
                    ? extract.getTensor().getDefiningOp<tensor::FromElementsOp>()
                    : tensor::FromElementsOp();
    if (!wrap)
      continue;
    extract.replaceAllUsesWith(wrap.getElements()[0]);
    extract.erase();
    wraps.insert(wrap);
  }
  // The ops already in the block come first: the ones outline left there.
  Block *block = request->getBlock();
  if (auto [it, fresh] = byPosition.try_emplace(block); fresh)
    for (Operation &op : *block)
      if (std::optional<int64_t> position = positionOf(&op))
        it->second.try_emplace(*position, &op);
  SmallVector<Operation *> positioned, constants, sizeReads;
  for (Operation &op : body.without_terminator()) {
    if (positionOf(&op))
      positioned.push_back(&op);
    else if (isa<tensor::DimOp, arith::MulIOp, arith::DivSIOp>(op))
      sizeReads.push_back(&op);
    // Without positions: what dice-outline clones into every request that
    // reads it, constants and tensor.empty (pure, no operands, so equal
    // ones are interchangeable).
    else if (op.getNumOperands() == 0 && op.getNumRegions() == 0 &&
             isMemoryEffectFree(&op))
      constants.push_back(&op);
  }
  block->getOperations().splice(
      Block::iterator(request), body.getOperations(), body.begin(),
      Block::iterator(yield));
  for (Operation *op : positioned)
    unrematerialize(op);
  // The sizes dice-outline read inside the request for its dynamic
  // tensor.empty ops (tensor.dim, times a factor), unused once those
  // merged with their originals.
  for (Operation *op : llvm::reverse(sizeReads)) { // readers before what they read
    if (!op->use_empty())
      continue;
    SmallVector<Operation *> operands;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        operands.push_back(def);
    op->erase();
    for (Operation *def : operands)
      if (def->use_empty() && llvm::is_contained(constants, def)) {
        llvm::erase(constants, def);
        def->erase();
      }
  }
  // The constants those size reads used (a factor, a dimension's index).
  llvm::erase_if(constants, [](Operation *constant) {
    if (!constant->use_empty() || !constant->getResult(0).getType().isIndex())
      return false;
    constant->erase();
    return true;
  });
  for (Operation *constant : constants)
    unrematerializeConstant(constant, request);
  request.erase();
  for (Operation *wrap : wraps)
    if (wrap->use_empty())
      wrap->erase();
}

void ResolvePass::runOnOperation() {
  ModuleOp module = getOperation();
  FailureOr<::dice::Config> config = loadPassConfig(module, configFile);
  if (failed(config))
    return signalPassFailure();
  double threshold =
      minSpeedup >= 0 ? minSpeedup.getValue() : config->verifier.minSpeedup;
  std::string artifactDir =
      artifacts.empty() ? config->artifactDir : std::string(artifacts);
  kernelInsertPoint = OpBuilder::InsertPoint();
  kernels.clear();
  lastHoisted.clear();
  byPosition.clear();

  SmallVector<KernelRequestOp> requests;
  module.walk([&](KernelRequestOp request) { requests.push_back(request); });

  std::shared_ptr<::dice::KernelStore> db;
  std::vector<ReportRow> rows;
  ReportTotals totals;
  for (KernelRequestOp request : requests) {
    ++numRequests;
    ++totals.requests;
    ArrayRef<Attribute> candidates;
    if (ArrayAttr attr = request.getCandidatesAttr())
      candidates = attr.getValue();
    numCandidates += candidates.size();
    totals.candidates += candidates.size();

    ReportRow row;
    row.fingerprint = request.getFingerprint().str();
    row.level = request.getLevel();
    row.ops = summarizeOps(request.getBody());
    row.candidates = candidates.size();

    // Tally the verdicts and find the fastest eligible candidate and the
    // fastest correct one (eligible or not).
    std::map<VerdictStatus, unsigned> counts;
    unsigned notVerified = 0;
    std::string firstUnverifiedReason;
    CandidateAttr best;
    double bestSpeedup = 0;
    unsigned bestIndex = 0;
    std::optional<double> fastestCorrect;
    for (auto [i, attr] : llvm::enumerate(candidates)) {
      auto candidate = llvm::cast<CandidateAttr>(attr);
      VerdictAttr verdict = candidate.getVerdict();
      row.candidateList.push_back(candidateJson(request, candidate));
      if (!verdict) {
        ++notVerified;
        continue;
      }
      ++counts[verdict.getStatus()];
      if (verdict.getStatus() == VerdictStatus::Unverified &&
          firstUnverifiedReason.empty() && verdict.getReason())
        firstUnverifiedReason = firstLine(verdict.getReason().getValue());
      std::optional<double> speedup = verdict.getMeasurements().speedup;
      if (!speedup)
        continue;
      fastestCorrect = std::max(fastestCorrect.value_or(0), *speedup);
      if (verdict.isAccepted() && *speedup >= threshold &&
          (!best || *speedup > bestSpeedup)) {
        best = candidate;
        bestSpeedup = *speedup;
        bestIndex = i;
      }
    }

    std::string verdicts;
    llvm::raw_string_ostream verdictsOs(verdicts);
    // Listed in the statuses' order, best first.
    for (VerdictStatus status : ::dice::kVerdictStatuses)
      if (unsigned n = counts[status])
        verdictsOs << (verdicts.empty() ? "" : ", ")
                   << ::dice::verdictStatusName(status) << " (" << n << ")";
    if (notVerified)
      verdictsOs << (verdicts.empty() ? "" : ", ") << "not verified ("
                 << notVerified << ")";
    row.verdicts = verdicts.empty() ? "-" : verdicts;

    if (best) {
      ::dice::KernelKey key = kernelKeyOf(request);
      if (!db) {
        db = openKernelStore(module, database, *config);
        if (!db)
          return signalPassFailure();
      }
      // Only stored candidates can be chosen; a verdict written by hand into
      // the IR has no record, and the choice is then just not remembered.
      if (::dice::Status recorded = db->choose(
              key, ::dice::sha256Hex(best.getSource().getValue().str()));
          !recorded)
        request.emitWarning() << "choice not recorded in kernel database "
                              << recorded.error().describe();
      // A candidate from the database carries no artifact path: its library
      // is in the database, and goes beside the verifier's builds.
      if (!best.getArtifact()) {
        llvm::Expected<StringAttr> path = storedArtifact(
            &getContext(), *db, key,
            ::dice::sha256Hex(best.getSource().getValue().str()), artifactDir);
        if (!path) {
          request.emitOpError()
              << "cannot write the stored kernel library of "
                 "the chosen candidate under "
              << artifactDir << ": " << llvm::toString(path.takeError());
          return signalPassFailure();
        }
        if (*path)
          best = CandidateAttr::get(&getContext(), best.getAnswer(),
                                    best.getSource(), best.getVerdict(), *path);
      }
      request.emitRemark() << "using kernel @" << request.getKernelSymbolName()
                           << ": candidate " << bestIndex + 1 << " of "
                           << candidates.size() << " accepted, "
                           << formatSpeedup(bestSpeedup) << " over the "
                           << ::dice::toString(config->verifier.baseline)
                           << " baseline";
      row.outcome = "@" + request.getKernelSymbolName() + " " +
                    formatSpeedup(bestSpeedup);
      row.kernel = request.getKernelSymbolName();
      row.speedup = bestSpeedup;
      ++numAccepted;
      ++totals.accepted;
      useKernel(request, best);
      rows.push_back(std::move(row));
      continue;
    }

    Fallback kind;
    std::string reason;
    unsigned failed = counts[VerdictStatus::Incorrect] +
                      counts[VerdictStatus::Deceptive] +
                      counts[VerdictStatus::CompileError] +
                      counts[VerdictStatus::Crashed];
    if (candidates.empty()) {
      kind = Fallback::NoCandidates;
      reason = "no candidates";
    } else if (fastestCorrect) {
      kind = Fallback::TooSlow;
      reason = "fastest correct candidate is " + formatSpeedup(*fastestCorrect) +
               ", below min_speedup " + formatSpeedup(threshold);
    } else if (failed == candidates.size()) {
      kind = Fallback::AllFailed;
      reason = "all candidates " + verdicts;
    } else {
      // Some candidates were not (or could not be) run: say why, since that
      // is what a user can change.
      kind = Fallback::Unverified;
      reason = "unverified: " + (firstUnverifiedReason.empty()
                                     ? std::string("run dice-verify first")
                                     : firstUnverifiedReason);
      if (failed)
        reason += " (" + verdicts + ")";
    }
    switch (kind) {
    case Fallback::NoCandidates:
      ++numNoCandidates, ++totals.noCandidates;
      row.fallbackKind = "no_candidates";
      break;
    case Fallback::AllFailed:
      ++numAllFailed, ++totals.allFailed;
      row.fallbackKind = "all_failed";
      break;
    case Fallback::TooSlow:
      ++numTooSlow, ++totals.tooSlow;
      row.fallbackKind = "too_slow";
      break;
    case Fallback::Unverified:
      ++numUnverified, ++totals.unverified;
      row.fallbackKind = "unverified";
      break;
    }
    row.fallbackReason = reason;
    request.emitRemark() << "falling back to the original ops: " << reason;
    row.outcome = "fallback: " + reason;
    inlineBack(request);
    rows.push_back(std::move(row));
  }

  llvm::SetVector<Block *> outlinedBlocks;
  module.walk([&](Operation *op) {
    if (positionOf(op))
      outlinedBlocks.insert(op->getBlock());
  });
  for (Block *block : outlinedBlocks)
    restoreOriginalOrder(*block);

  getDiceServices(&getContext()).recordResolved(reportJson(rows, totals));
  if (report.empty())
    return;
  std::string text;
  llvm::raw_string_ostream os(text);
  writeReport(os, rows, totals);
  if (llvm::Error failed =
          getDiceServices(&getContext()).writeArtifact(report, text)) {
    module.emitError() << "cannot write the report: "
                       << llvm::toString(std::move(failed));
    return signalPassFailure();
  }
}

} // namespace
