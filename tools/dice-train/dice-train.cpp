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
#include <algorithm>
#include <cstdio>
#include <execinfo.h>
#include <dlfcn.h>
#include <ucontext.h>
#include <unistd.h>

namespace {

/// A crash of the trainer itself (not of a candidate: those run in sandboxed
/// workers) says where it happened before the process dies: the faulting
/// address, the instruction and the words on top of the stack (a call
/// through a bad pointer leaves its caller's return address there), each as
/// object+offset for addr2line, then the stack as far as it unwinds.
void writeAddress(const char *label, uintptr_t address) {
  char text[512];
  Dl_info where{};
  int n;
  if (dladdr(reinterpret_cast<void *>(address), &where) && where.dli_fname)
    n = std::snprintf(text, sizeof text, "  %s %s+0x%lx (%s)\n", label, where.dli_fname,
                      (unsigned long)(address - uintptr_t(where.dli_fbase)),
                      where.dli_sname ? where.dli_sname : "?");
  else
    n = std::snprintf(text, sizeof text, "  %s 0x%lx\n", label, (unsigned long)address);
  (void)!write(STDERR_FILENO, text, size_t(std::min(n, int(sizeof text) - 1)));
}

void reportCrash(int signal, siginfo_t *info, void *context) {
  const char message[] = "dice-train: internal error: fatal signal; where:\n";
  (void)!write(STDERR_FILENO, message, sizeof message - 1);
  writeAddress("fault address", uintptr_t(info->si_addr));
#if defined(__x86_64__)
  auto *uc = static_cast<ucontext_t *>(context);
  writeAddress("pc", uintptr_t(uc->uc_mcontext.gregs[REG_RIP]));
  auto *sp = reinterpret_cast<uintptr_t *>(uc->uc_mcontext.gregs[REG_RSP]);
  for (int k = 0; k < 6; ++k)
    writeAddress("stack", sp[k]);
#endif
  void *frames[64];
  int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

} // namespace

int main(int argc, char **argv) {
  struct sigaction onCrash {};
  onCrash.sa_sigaction = reportCrash;
  onCrash.sa_flags = SA_SIGINFO;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT})
    sigaction(sig, &onCrash, nullptr);
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
