//===- Subprocess.h - run a tool with a deadline ----------------*- C++ -*-===//
//
// The verifier runs nvcc (and later the GPU worker) as child processes that
// may hang or fork helpers of their own (nvcc runs cicc, ptxas, gcc). Each
// child gets a process group of its own, so a deadline kills the whole tree.
// POSIX only; no LLVM, no LibTorch.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_SANDBOX_SUBPROCESS_H
#define DICE_SANDBOX_SUBPROCESS_H

#include <string>
#include <vector>

namespace dice {

struct ProcessResult {
  int exitCode = -1;     ///< valid when the process exited
  int signal = 0;        ///< the signal that ended it, 0 when it exited
  bool timedOut = false; ///< killed at the deadline
  std::string spawnError; ///< why it could not be started
  double milliseconds = 0;

  bool succeeded() const {
    return spawnError.empty() && !timedOut && signal == 0 && exitCode == 0;
  }
};

/// Runs `argv` (argv[0] searched in PATH) with stdin from /dev/null and
/// stdout and stderr appended to `outputPath`. After `timeoutSeconds` (0: no
/// limit) the process group gets SIGKILL.
ProcessResult runProcess(const std::vector<std::string> &argv,
                         const std::string &outputPath, double timeoutSeconds);

} // namespace dice

#endif // DICE_SANDBOX_SUBPROCESS_H
