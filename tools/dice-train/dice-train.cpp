//===- dice-train.cpp - SFT and BiC-RL of DICE models ---------------------===//
//
//   dice-train --config train.toml [--set optim.lr=1e-4 ...]
//   torchrun --nproc-per-node 2 --no-python dice-train --config train.toml
//
// One run trains one stage of the recipe (docs/train.md): `sft`, then
// `rl-infill`, then `rl-e2e`, each starting from the previous one's
// checkpoint. Checkpoints are Hugging Face folders the runtime and
// transformers load; metrics are JSONL beside them.
//
//===----------------------------------------------------------------------===//

#include "dice/Support/CommandLine.h"
#include "dice/Train/TrainConfig.h"
#include "dice/Train/Trainer.h"

#include <csignal>
#include <cstdio>
#include <execinfo.h>
#include <unistd.h>

namespace {

/// A crash of the trainer itself (not of a candidate: those run in sandboxed
/// workers) says where it happened before the process dies.
void reportCrash(int signal) {
  const char message[] = "dice-train: internal error: fatal signal; stack:\n";
  (void)!write(STDERR_FILENO, message, sizeof message - 1);
  void *frames[64];
  int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

} // namespace

int main(int argc, char **argv) {
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT})
    std::signal(sig, reportCrash);
  std::string configPath;
  std::vector<std::string> overrides;
  dice::CommandLine cl(
      "dice-train",
      "trains a DICE/SDAR block-diffusion model: supervised fine-tuning with "
      "the BD3-LM loss, or BiC-RL (kernel infilling, then end to end) with "
      "rewards from the compiler's verifier. Run it under torchrun for several "
      "GPUs or CPU processes.",
      "--config <train.toml> [--set section.key=value ...]");
  cl.add_option("--config", configPath, "the run's configuration (docs/train.md)")
      ->required();
  cl.add_option("--set", overrides,
                "overrides one key, e.g. --set run.steps=10 --set 'run.stage=\"rl-infill\"'");
  if (std::optional<int> exit = cl.parse(argc, argv))
    return *exit;

  dice::Result<dice::TrainConfig> config = dice::loadTrainConfigFile(configPath);
  if (!config) {
    std::fprintf(stderr, "dice-train: %s\n", config.error().format().c_str());
    return 1;
  }
  for (const std::string &o : overrides) {
    size_t eq = o.find('=');
    if (eq == std::string::npos)
      return cl.usageError("--set expects section.key=value, got '" + o + "'");
    std::string key = o.substr(0, eq), value = o.substr(eq + 1);
    dice::Status ok = dice::applyTrainOverride(*config, key, value);
    // A bare word is a string: --set run.stage=sft.
    if (!ok && !value.empty() && value.front() != '"' && value.front() != '[')
      ok = dice::applyTrainOverride(*config, key, "\"" + value + "\"");
    if (!ok) {
      std::fprintf(stderr, "dice-train: %s\n", ok.error().format().c_str());
      return 1;
    }
  }
  if (dice::Status ran = dice::runTraining(*config); !ran) {
    std::fprintf(stderr, "dice-train: %s\n", ran.error().format().c_str());
    return 1;
  }
  return 0;
}
