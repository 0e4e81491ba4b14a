//===- fuzz_deception.cpp - the static deception analysis -----------------===//
//
// Any candidate source is analysed or rejected as a compile error with the
// error's text; findings point at lines of the source, in order. The
// prologue is precompiled once (as the verifier does), so each input costs
// one parse of the candidate alone.
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"

#include "dice/Deception/DeceptionAnalysis.h"
#include "dice/Verifier/CandidateVerifier.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace {

dice::AnalysisOptions &options() {
  static dice::AnalysisOptions analysis;
  return analysis;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  static dice::fuzz::ScratchDir cache;
  dice::KernelBuildOptions build = dice::defaultKernelBuildOptions(cache.path());
  dice::AnalysisOptions &analysis = options();
  analysis.prologueDir = build.prologueDir;
  analysis.includeDirs = build.includeDirs;
  analysis.gpuArch = build.gpuArch;
  std::string pch = cache.path() + "/prologue.pch";
  if (std::optional<std::string> failed = dice::buildProloguePch(analysis, pch)) {
    std::fprintf(stderr, "cannot precompile the prologue: %s\n", failed->c_str());
    std::abort();
  }
  analysis.pchPath = pch;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string source(dice::fuzz::asText(data, size));
  dice::DeceptionReport report = dice::analyzeCandidate(source, options());
  if (report.outcome == dice::AnalysisOutcome::CompileError) {
    DICE_FUZZ_CHECK(!report.error.empty(), "a compile error needs its text");
    DICE_FUZZ_CHECK(report.findings.empty(), "findings on a TU that did not parse");
    return 0;
  }
  unsigned lines = static_cast<unsigned>(std::count(source.begin(), source.end(), '\n')) + 1;
  unsigned previous = 0;
  for (const dice::DeceptionFinding &finding : report.findings) {
    DICE_FUZZ_CHECK(finding.line >= 1 && finding.line <= lines,
                    "finding outside the source: " + finding.format());
    DICE_FUZZ_CHECK(finding.line >= previous, "findings out of source order");
    DICE_FUZZ_CHECK(!finding.message.empty(), "a finding needs a message");
    previous = finding.line;
  }
  return 0;
}
