//===- VerifyPipeline.h - candidate to verdict, CPU side --------*- C++ -*-===//
//
// The verifier's steps that need no GPU: extraction, static deception
// analysis (where the compiler half is built), the nvcc build. What a GPU
// would decide (correctness, timing) is left `unverified` with the reason.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_TOOLS_VERIFYPIPELINE_H
#define DICE_TOOLS_VERIFYPIPELINE_H

#include "dice/Verifier/KernelBuild.h"
#include "dice/Verifier/Verdict.h"

#include <string>
#include <vector>

namespace dice {

struct Candidate {
  std::string name;        ///< file name or batch line, for the table
  std::string fingerprint;
  std::string signature;   ///< the dice_forward declaration
  std::string programJson; ///< the reference program, may be empty
  std::string text;        ///< the model's answer, or CUDA source
  bool isCudaSource = false; ///< `text` is the hole itself, not an answer
};

struct PipelineOptions {
  KernelBuildOptions build;
  unsigned jobs = 1;
  bool staticAnalysis = true;
};

struct PipelineReport {
  std::vector<Verdict> verdicts; ///< one per candidate, in order
  std::vector<std::string> artifacts; ///< the library per candidate, or ""
  std::vector<std::string> notes;     ///< said once, e.g. "no CUDA device"
};

/// Whether this machine has a usable NVIDIA driver and device.
bool haveCudaDevice();

PipelineReport verifyCandidates(const std::vector<Candidate> &candidates,
                                const PipelineOptions &options);

} // namespace dice

#endif // DICE_TOOLS_VERIFYPIPELINE_H
