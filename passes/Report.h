//===- Report.h - the per-request report of dice-resolve --------*- C++ -*-===//
//
// What `--dice-report` writes: one row per kernel request saying what it
// computes, what its candidates were judged, and what became of it. The
// same rows as JSON, each candidate with its verdict, go to the driver's
// services (DiceServices::recordResolved), which write them with the run's
// remarks (`dice-opt --dice-report-json`).
//
//===----------------------------------------------------------------------===//

#ifndef DICE_PASSES_REPORT_H
#define DICE_PASSES_REPORT_H

#include "mlir/IR/Region.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::dice {

struct ReportRow {
  std::string fingerprint;
  int level = 0;
  std::string ops;      ///< summarizeOps of the request's region
  unsigned candidates = 0;
  std::string verdicts; ///< "accepted 1, incorrect 3", "-" for none
  std::string outcome;  ///< "k_<fp> 2.4x" or "fallback: <reason>"

  /// The same, as JSON: each candidate (candidate_hash, status, verdict,
  /// artifact), and the kernel used with its speedup or the fallback's kind
  /// and reason.
  llvm::json::Array candidateList;
  std::string kernel; ///< the kernel's symbol; empty for a fallback
  double speedup = 0; ///< the kernel's, over the baseline
  std::string fallbackKind, fallbackReason;
};

/// The run as a whole: the pass statistics of dice-resolve, for every build
/// (LLVM release builds compile `-mlir-pass-statistics` counters out).
struct ReportTotals {
  unsigned requests = 0, candidates = 0, accepted = 0;
  unsigned noCandidates = 0, allFailed = 0, tooSlow = 0, unverified = 0;
};

/// The work a region does, heaviest first: `linalg.matmul + 2 generic`.
/// Ops that only allocate or fill (tensor.empty, linalg.fill, constants)
/// are left out.
std::string summarizeOps(Region &region);

/// The table, with a header and one line per row, then a line of totals:
/// `total: requests: 9, candidates: 11, kernels used: 5, fallbacks: 4 (all
/// failed: 2, too slow: 2)`.
void writeReport(llvm::raw_ostream &os, llvm::ArrayRef<ReportRow> rows,
                 const ReportTotals &totals);

/// The rows and totals as one JSON object: `requests` (one object per row)
/// and `totals` (docs/passes.md, "The JSON report").
llvm::json::Object reportJson(llvm::ArrayRef<ReportRow> rows,
                              const ReportTotals &totals);

} // namespace mlir::dice

#endif // DICE_PASSES_REPORT_H
