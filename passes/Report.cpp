//===- Report.cpp - the per-request table of dice-resolve -----------------===//

#include "Report.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Format.h"

using namespace mlir;
using namespace mlir::dice;

std::string mlir::dice::summarizeOps(Region &region) {
  llvm::MapVector<StringRef, unsigned> counts;
  region.walk([&](Operation *op) {
    StringRef name = op->getName().getStringRef();
    // Only the top level of the request: payload ops inside a generic are
    // part of the generic.
    if (op->getParentRegion() != &region)
      return;
    if (llvm::is_contained({"tensor.empty", "linalg.fill", "arith.constant",
                            "dice.yield"},
                           name))
      return;
    ++counts[name];
  });
  if (counts.empty())
    return "(no ops)";
  SmallVector<std::pair<StringRef, unsigned>> ordered(counts.begin(),
                                                       counts.end());
  // The op with a reduction loop names the request; KernelBench level-2
  // requests are one heavy op and its epilogue.
  auto heavy = llvm::find_if(ordered, [](const auto &entry) {
    return !entry.first.ends_with(".generic");
  });
  if (heavy != ordered.end())
    std::rotate(ordered.begin(), heavy, heavy + 1);
  std::string text;
  llvm::raw_string_ostream os(text);
  for (auto [i, entry] : llvm::enumerate(ordered)) {
    auto [name, count] = entry;
    if (i)
      os << " + ";
    if (count > 1)
      os << count << " ";
    // After the first op the dialect is understood: "+ 2 generic".
    os << (i ? name.substr(name.find('.') + 1) : name);
  }
  return text;
}

void mlir::dice::writeReport(raw_ostream &os, ArrayRef<ReportRow> rows,
                             const ReportTotals &totals) {
  unsigned opsWidth = 3;
  unsigned verdictsWidth = 8;
  for (const ReportRow &row : rows) {
    opsWidth = std::max<unsigned>(opsWidth, row.ops.size());
    verdictsWidth = std::max<unsigned>(verdictsWidth, row.verdicts.size());
  }
  auto line = [&](StringRef fp, StringRef level, StringRef ops,
                  StringRef candidates, StringRef verdicts, StringRef outcome) {
    os << llvm::left_justify(fp, 12) << "  " << llvm::left_justify(level, 5)
       << "  " << llvm::left_justify(ops, opsWidth) << "  "
       << llvm::right_justify(candidates, 10) << "  "
       << llvm::left_justify(verdicts, verdictsWidth) << "  " << outcome
       << "\n";
  };
  line("fingerprint", "level", "ops", "candidates", "verdicts", "result");
  for (const ReportRow &row : rows)
    line(StringRef(row.fingerprint).take_front(12), std::to_string(row.level),
         row.ops, std::to_string(row.candidates), row.verdicts, row.outcome);

  unsigned fallbacks = totals.noCandidates + totals.allFailed + totals.tooSlow +
                       totals.unverified;
  os << "total: requests: " << totals.requests
     << ", candidates: " << totals.candidates
     << ", kernels used: " << totals.accepted << ", fallbacks: " << fallbacks;
  std::string separator = " (";
  for (auto [count, reason] :
       {std::pair{totals.noCandidates, "no candidates"},
        std::pair{totals.allFailed, "all failed"},
        std::pair{totals.tooSlow, "too slow"},
        std::pair{totals.unverified, "unverified"}})
    if (count) {
      os << separator << reason << ": " << count;
      separator = ", ";
    }
  os << (fallbacks ? ")\n" : "\n");
}

llvm::json::Object mlir::dice::reportJson(ArrayRef<ReportRow> rows,
                                          const ReportTotals &totals) {
  llvm::json::Array requests;
  for (const ReportRow &row : rows) {
    llvm::json::Object request{
        {"fingerprint", row.fingerprint},
        {"level", row.level},
        {"ops", row.ops},
        {"candidates", llvm::json::Array(row.candidateList)},
        {"kernel", row.kernel.empty() ? llvm::json::Value(nullptr)
                                      : llvm::json::Value(row.kernel)},
        {"speedup", row.kernel.empty() ? llvm::json::Value(nullptr)
                                       : llvm::json::Value(row.speedup)},
        {"fallback", row.fallbackKind.empty()
                         ? llvm::json::Value(nullptr)
                         : llvm::json::Value(llvm::json::Object{
                               {"kind", row.fallbackKind},
                               {"reason", row.fallbackReason}})}};
    requests.push_back(std::move(request));
  }
  return llvm::json::Object{
      {"requests", std::move(requests)},
      {"totals", llvm::json::Object{{"requests", totals.requests},
                                    {"candidates", totals.candidates},
                                    {"kernels_used", totals.accepted},
                                    {"no_candidates", totals.noCandidates},
                                    {"all_failed", totals.allFailed},
                                    {"too_slow", totals.tooSlow},
                                    {"unverified", totals.unverified}}}};
}
