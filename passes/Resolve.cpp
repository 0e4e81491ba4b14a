//===- Resolve.cpp - use the best kernel of each request, or inline back --===//

#include "KernelStore.h"
#include "Passes.h"
#include "Report.h"

#include "dice/Verifier/Sha256.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

namespace mlir::dice {
#define GEN_PASS_DEF_DICERESOLVE
#include "Passes.h.inc"
} // namespace mlir::dice

using namespace mlir;
using namespace mlir::dice;

namespace {

/// The order in which failure kinds are listed in reasons and reports.
constexpr VerdictStatus kStatusOrder[] = {
    VerdictStatus::accepted,   VerdictStatus::slow,
    VerdictStatus::incorrect,  VerdictStatus::deceptive,
    VerdictStatus::compile_error, VerdictStatus::crashed,
    VerdictStatus::unverified};

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
  llvm::raw_string_ostream(text) << llvm::format("%.2fx", speedup);
  return text;
}

/// Writes the stored library of a candidate to `<dir>/db/<hash>.so` (left
/// alone when it holds those bytes already) and returns the path; a null
/// attribute when the database has no library for it.
FailureOr<StringAttr> storedArtifact(MLIRContext *ctx,
                                     const ::dice::KernelDatabase &db,
                                     const ::dice::KernelKey &key,
                                     const std::string &hash, StringRef dir) {
  auto bytes = db.artifact(key, hash);
  if (!bytes)
    return failure();
  if (!*bytes)
    return StringAttr();
  SmallString<256> path(dir);
  llvm::sys::path::append(path, "db");
  if (llvm::sys::fs::create_directories(path))
    return failure();
  llvm::sys::path::append(path, hash + ".so");
  StringRef data(reinterpret_cast<const char *>((*bytes)->data()),
                 (*bytes)->size());
  auto existing = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
  if (!existing || (*existing)->getBuffer() != data) {
    // Through a rename: another process may have the old file mapped.
    int fd;
    SmallString<256> temp;
    if (llvm::sys::fs::createUniqueFile(path + "-%%%%%%.tmp", fd, temp))
      return failure();
    {
      llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
      os << data;
      if (os.has_error()) {
        os.clear_error();
        llvm::sys::fs::remove(temp);
        return failure();
      }
    }
    if (llvm::sys::fs::rename(temp, path)) {
      llvm::sys::fs::remove(temp);
      return failure();
    }
  }
  return StringAttr::get(ctx, path);
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
  /// Undoes dice-outline's rematerialization of a constant: reuses an equal
  /// constant before the request, or moves it up among the constants that
  /// start the block.
  void unrematerialize(Operation *constant, Operation *request);

  OpBuilder::InsertPoint kernelInsertPoint;
  /// The last constant moved to the start of each block, so several keep
  /// their order of first use.
  llvm::DenseMap<Block *, Operation *> lastHoisted;
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
  request.replaceAllUsesWith(call.getResults());
  request.erase();
}

void ResolvePass::unrematerialize(Operation *constant, Operation *request) {
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
  // What dice-outline clones into every request that reads it: constants
  // and tensor.empty (pure, no operands, so equal ones are interchangeable).
  SmallVector<Operation *> constants;
  for (Operation &op : body.without_terminator())
    if (op.getNumOperands() == 0 && op.getNumRegions() == 0 &&
        isMemoryEffectFree(&op))
      constants.push_back(&op);
  request->getBlock()->getOperations().splice(
      Block::iterator(request), body.getOperations(), body.begin(),
      Block::iterator(yield));
  for (Operation *constant : constants)
    unrematerialize(constant, request);
  request.erase();
}

void ResolvePass::runOnOperation() {
  ModuleOp module = getOperation();
  const DriverDefaults &defaults = getDriverDefaults();
  double threshold =
      minSpeedup >= 0 ? minSpeedup.getValue() : defaults.config.verifier.minSpeedup;
  std::string reportPath = report.empty() ? defaults.reportPath : report;
  kernelInsertPoint = OpBuilder::InsertPoint();
  kernels.clear();
  lastHoisted.clear();

  SmallVector<KernelRequestOp> requests;
  module.walk([&](KernelRequestOp request) { requests.push_back(request); });

  std::optional<::dice::KernelDatabase> db;
  std::vector<ReportRow> rows;
  for (KernelRequestOp request : requests) {
    ++numRequests;
    ArrayRef<Attribute> candidates;
    if (ArrayAttr attr = request.getCandidatesAttr())
      candidates = attr.getValue();
    numCandidates += candidates.size();

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
      if (!verdict) {
        ++notVerified;
        continue;
      }
      ++counts[verdict.getStatus()];
      if (verdict.getStatus() == VerdictStatus::unverified &&
          firstUnverifiedReason.empty() && verdict.getReason())
        firstUnverifiedReason = firstLine(verdict.getReason().getValue());
      std::optional<double> speedup = verdict.getMetric("speedup");
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
    for (VerdictStatus status : kStatusOrder)
      if (unsigned n = counts[status])
        verdictsOs << (verdicts.empty() ? "" : ", ")
                   << stringifyVerdictStatus(status) << " (" << n << ")";
    if (notVerified)
      verdictsOs << (verdicts.empty() ? "" : ", ") << "not verified ("
                 << notVerified << ")";
    row.verdicts = verdicts.empty() ? "-" : verdicts;

    if (best) {
      ::dice::KernelKey key = kernelKeyOf(request);
      if (!db) {
        db = openKernelDatabase(module, databasePathFor(database));
        if (!db)
          return signalPassFailure();
      }
      // Only stored candidates can be chosen; a verdict written by hand into
      // the IR has no record, and the choice is then just not remembered.
      if (::dice::KernelDatabaseStatus failed = db->choose(
              key, ::dice::sha256Hex(best.getSource().getValue().str())))
        request.emitWarning() << "choice not recorded in kernel database "
                              << failed->path << ": " << failed->message;
      // A candidate from the database carries no artifact path: its library
      // is in the database, and goes beside the verifier's builds.
      if (!best.getArtifact()) {
        FailureOr<StringAttr> path = storedArtifact(
            &getContext(), *db, key, ::dice::sha256Hex(best.getSource().getValue().str()),
            defaults.config.artifactDir);
        if (failed(path)) {
          request.emitOpError() << "cannot write the stored kernel library of "
                                   "the chosen candidate under "
                                << defaults.config.artifactDir;
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
                           << ::dice::toString(defaults.config.verifier.baseline)
                           << " baseline";
      row.outcome = "@" + request.getKernelSymbolName() + " " +
                    formatSpeedup(bestSpeedup);
      ++numAccepted;
      useKernel(request, best);
      rows.push_back(std::move(row));
      continue;
    }

    Fallback kind;
    std::string reason;
    unsigned failed = counts[VerdictStatus::incorrect] +
                      counts[VerdictStatus::deceptive] +
                      counts[VerdictStatus::compile_error] +
                      counts[VerdictStatus::crashed];
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
    case Fallback::NoCandidates: ++numNoCandidates; break;
    case Fallback::AllFailed: ++numAllFailed; break;
    case Fallback::TooSlow: ++numTooSlow; break;
    case Fallback::Unverified: ++numUnverified; break;
    }
    request.emitRemark() << "falling back to the original ops: " << reason;
    row.outcome = "fallback: " + reason;
    inlineBack(request);
    rows.push_back(std::move(row));
  }

  if (reportPath.empty())
    return;
  if (reportPath == "-") {
    writeReport(llvm::outs(), rows);
    llvm::outs().flush();
    return;
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(reportPath, ec, llvm::sys::fs::OF_Text);
  if (ec) {
    module.emitError() << "cannot write the report " << reportPath << ": "
                       << ec.message();
    return signalPassFailure();
  }
  writeReport(os, rows);
}

} // namespace
