//===- Verdict.h - the verifier's judgement of one candidate ----*- C++ -*-===//
//
// One verdict per candidate kernel, as JSON (one object per line in batch
// output) and as the `#dice.verdict` attribute. The JSON side is plain C++
// (no LLVM, no LibTorch), so the compiler and the GPU worker both produce
// and read it; the statuses and the rules a verdict obeys are
// VerdictStatus.h's, which the attribute's verifier applies too, so a
// verdict that passes here is one the dialect accepts.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_VERIFIERCORE_VERDICT_H
#define DICE_VERIFIERCORE_VERDICT_H

#include "dice/Support/Result.h"
#include "dice/VerifierCore/VerdictStatus.h"

#include <map>
#include <string>
#include <string_view>

namespace dice {

/// Version of the verification procedure; part of every verdict, so a
/// kernel database can tell verdicts of an older verifier apart.
inline constexpr int kVerifierVersion = 1;

/// The measurements (compileMs, ..., launchedKernels) are the base's.
struct Verdict : VerdictMeasurements {
  std::string fingerprint;   ///< the request's fingerprint
  std::string candidateHash; ///< SHA-256 of the candidate's CUDA source
  VerdictStatus status = VerdictStatus::Unverified;
  /// A sentence a user can act on; required for every status but accepted.
  std::string reason;

  /// Every baseline timed or given, in ms by name: "reference" (the
  /// reference program, timed by the worker), "eager" (eager PyTorch as
  /// the caller timed it), "inductor" (Inductor's code), "given" (a time
  /// handed in without a name). `baseline` names the one that decided, the
  /// fastest, whose time is baselineMs.
  std::map<std::string, double> baselines;
  std::string baseline;

  std::string gpu;    ///< device name; empty where none was used
  std::string driver; ///< driver version; empty where none was used
  int verifierVersion = kVerifierVersion;

  /// Records both timings and the speedup they imply.
  void setTimings(double kernel, double baseline);

  /// Empty when consistent; otherwise what is wrong, as a sentence fragment
  /// ("deceptive verdict needs a reason a user can act on"): a fingerprint,
  /// and checkVerdictConsistency's rules.
  std::string validate() const;

  /// One JSON object on one line; absent measurements are `null`, and
  /// non-finite ones strings in nonFiniteSpelling's words ("inf", "nan").
  std::string toJson() const;
  /// Parses and validates what toJson wrote (absent keys read as null). A
  /// failure's `key` is the field at fault, when one is.
  static Result<Verdict> fromJson(std::string_view text);
};

} // namespace dice

#endif // DICE_VERIFIERCORE_VERDICT_H
