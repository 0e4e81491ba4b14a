//===- VerifierProcess.h - rewards from dice-verify in its own process ---===//
//
// The trainer judges rollouts with the compiler's verifier run as its own
// process (`dice-verify --batch --json`), not in-process: a fault in the
// verifier cannot take a training run down, and its sandboxed GPU workers
// are forked from a process that holds no CUDA context or LibTorch state
// (forking the trainer, which does, faulted in the parent on the H200).
//
//===----------------------------------------------------------------------===//

#ifndef DICE_LIB_TRAIN_VERIFIERPROCESS_H
#define DICE_LIB_TRAIN_VERIFIERPROCESS_H

#include "dice/Config/Config.h"
#include "dice/Support/Result.h"
#include "dice/Verifier/CandidateVerifier.h"

#include <string>
#include <vector>

namespace dice {

struct ProcessVerdicts {
  std::vector<Verdict> verdicts; ///< one per request, in order
  std::vector<std::string> notes; ///< what the verifier said for the run
};

/// Verifies `requests` with the dice-verify beside this installation's
/// tools, under `verifier`'s settings; `workDir` holds the batch, its
/// configuration, the build cache and the log. A dice-verify that crashes,
/// hangs past a deadline derived from the settings, or answers garbage
/// leaves every request `unverified` ("not judged: ...", said once in the
/// notes), which costs the batch its rewards, not the run; an error means
/// dice-verify cannot run at all (missing, or a usage error).
Result<ProcessVerdicts> verifyInProcess(const std::vector<VerificationRequest> &requests,
                                        const VerifierConfig &verifier,
                                        const std::string &workDir, uint64_t seed,
                                        unsigned jobs);

} // namespace dice

#endif // DICE_LIB_TRAIN_VERIFIERPROCESS_H
