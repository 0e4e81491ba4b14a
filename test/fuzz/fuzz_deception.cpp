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
#include <filesystem>
#include <unistd.h>

namespace {

dice::AnalysisOptions &options() {
  static dice::AnalysisOptions analysis;
  return analysis;
}

/// The precompiled prologue, built once per binary and kept under $TMPDIR:
/// libFuzzer's -fork and -jobs start many processes, and each would
/// otherwise spend tens of seconds parsing the prologue's headers.
std::string cachedPch(const dice::AnalysisOptions &analysis) {
  namespace fs = std::filesystem;
  const char *tmp = std::getenv("TMPDIR");
  fs::path self = fs::read_symlink("/proc/self/exe");
  std::string stamp = std::to_string(fs::file_size(self)) + "-" +
                      std::to_string(fs::last_write_time(self).time_since_epoch().count());
  fs::path pch = fs::path(tmp && *tmp ? tmp : "/tmp") /
                 ("dice-fuzz-deception-" + stamp + ".pch");
  if (fs::exists(pch))
    return pch.string();
  std::string partial = pch.string() + "." + std::to_string(getpid());
  if (std::optional<std::string> failed = dice::buildProloguePch(analysis, partial)) {
    std::fprintf(stderr, "cannot precompile the prologue: %s\n", failed->c_str());
    std::abort();
  }
  fs::rename(partial, pch);
  return pch.string();
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  dice::KernelBuildOptions build = dice::defaultKernelBuildOptions("");
  dice::AnalysisOptions &analysis = options();
  analysis.prologueDir = build.prologueDir;
  analysis.includeDirs = build.includeDirs;
  analysis.gpuArch = build.gpuArch;
  analysis.pchPath = cachedPch(analysis);
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
