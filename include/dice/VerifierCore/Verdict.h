//===- Verdict.h - the verifier's judgement of one candidate ----*- C++ -*-===//
//
// One verdict per candidate kernel, as JSON (one object per line in batch
// output) and as the `#dice.verdict` attribute. The JSON side is plain C++
// (no LLVM, no LibTorch), so the compiler and the GPU worker both produce
// and read it, and validation applies the attribute verifier's rules, so a
// verdict that passes here is one the dialect accepts.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_VERIFIERCORE_VERDICT_H
#define DICE_VERIFIERCORE_VERDICT_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dice {

/// Version of the verification procedure; part of every verdict, so a
/// kernel database can tell verdicts of an older verifier apart.
inline constexpr int kVerifierVersion = 1;

enum class VerdictStatus {
  Accepted,     ///< correct and faster than the baseline
  Slow,         ///< correct, not fast enough
  Incorrect,    ///< ran, results differ from the reference
  Deceptive,    ///< passes checks without computing in its own kernels
  CompileError, ///< no source, or it does not parse or build
  Crashed,      ///< faulted, hung or killed the worker
  Unverified    ///< could not be run here (no GPU)
};

/// "accepted", "compile_error", ...: the names of the JSON and the attribute.
std::string_view verdictStatusName(VerdictStatus status);
std::optional<VerdictStatus> parseVerdictStatus(std::string_view name);

struct Verdict {
  std::string fingerprint;   ///< the request's fingerprint
  std::string candidateHash; ///< SHA-256 of the candidate's CUDA source
  VerdictStatus status = VerdictStatus::Unverified;
  /// A sentence a user can act on; required for every status but accepted.
  std::string reason;

  std::optional<double> compileMs;
  std::optional<double> maxAbsErr;
  std::optional<double> maxRelErr;
  std::optional<int64_t> trials;
  std::optional<double> kernelMs;
  std::optional<double> baselineMs;
  /// baselineMs / kernelMs; setTimings keeps it so.
  std::optional<double> speedup;
  std::optional<int64_t> launchedKernels;

  std::string gpu;    ///< device name; empty where none was used
  std::string driver; ///< driver version; empty where none was used
  int verifierVersion = kVerifierVersion;

  /// Records both timings and the speedup they imply.
  void setTimings(double kernel, double baseline);

  /// Empty when consistent; otherwise what is wrong, as a sentence fragment
  /// ("deceptive verdict needs a reason a user can act on"). The rules:
  /// every number finite and non-negative; a reason for every status but
  /// accepted; accepted and slow carry kernel_ms > 0, baseline_ms and a
  /// speedup equal to baseline_ms / kernel_ms; compile_error and unverified
  /// carry no timings, since none of the candidate's code ran.
  std::string validate() const;

  /// One JSON object on one line; absent measurements are `null`.
  std::string toJson() const;
  /// Parses and validates what toJson wrote (absent keys read as null); on
  /// failure returns nothing and sets `error`.
  static std::optional<Verdict> fromJson(std::string_view text,
                                         std::string &error);
};

} // namespace dice

#endif // DICE_VERIFIERCORE_VERDICT_H
