//===- Services.h - what the dice passes ask of their driver ----*- C++ -*-===//
//
// Passes transform IR. The work around it is the driver's: the infill
// engine, kernel builds and GPU checks, the kernel store, files written for
// the user, progress lines. Each driver (dice-opt, the Python backend, the
// trainer) registers its own DiceServices on the contexts it creates
// (registerDiceServices); a context without any gets the standard services,
// which say nothing while they work.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_DRIVER_SERVICES_H
#define DICE_DRIVER_SERVICES_H

#include "dice/Config/Config.h"
#include "dice/Infill/EngineFactory.h"
#include "dice/KernelDB/KernelDatabase.h"
#include "dice/Runtime/Artifacts.h"
#include "dice/Verifier/CandidateVerifier.h"

#include "mlir/IR/DialectInterface.h"
#include "mlir/IR/DialectRegistry.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <functional>
#include <map>
#include <memory>
#include <mutex>

namespace mlir::dice {

class DiceServices : public DialectInterface::Base<DiceServices> {
public:
  explicit DiceServices(Dialect *dialect) : Base(dialect) {}

  /// The dice.toml at `path`, read and checked once per context: every
  /// pass of a pipeline that names it gets the same Config, and no pass
  /// reads the file itself. (The standard services that contexts without a
  /// driver's share read it each time: a long-lived process may change it.)
  virtual ::dice::Result<::dice::Config> loadConfig(const std::string &path) const;

  /// One line of long work ("dice-infill: [2/9] k_...: 8 candidates from
  /// ... in 3.1 s"); called from build threads too, one call per line.
  virtual void progress(const Twine &line) const;

  /// Loads the engine `spec` names (the replay file, the model).
  virtual ::dice::Result<std::unique_ptr<::dice::InfillEngine>>
  createInfillEngine(const ::dice::EngineSpec &spec) const;

  /// A verifier with these options: builds, static analysis, GPU workers.
  virtual std::unique_ptr<::dice::CandidateVerifier>
  createVerifier(const ::dice::CandidateVerifierOptions &options) const;

  /// Opens the kernel store at `path` (the SQLite kernel database by
  /// default). Passes ask kernelStore, which opens it once.
  virtual ::dice::Result<std::unique_ptr<::dice::KernelStore>>
  openKernelStore(const std::string &path) const;

  /// The kernel store at `path`, opened once per context and shared by the
  /// passes of a run (the standard services that contexts without a
  /// driver's share open it each time). A failure is not kept: the next
  /// call tries again.
  ::dice::Result<std::shared_ptr<::dice::KernelStore>>
  kernelStore(const std::string &path) const;

  /// Writes a file meant for the user or the program's runtime (the report,
  /// a kernel library, a trampoline, the manifest) in one piece: a reader
  /// never sees half of it. "-" is stdout.
  virtual llvm::Error writeArtifact(StringRef path, StringRef contents) const;

  /// writeArtifact as the artifact library's writer (dice/Runtime/Artifacts.h).
  ::dice::ArtifactWriter artifactWriter() const;

  /// What dice-resolve decided, as JSON (`requests` and `totals`, the
  /// rows of its report): a driver keeps it for its own report (dice-opt's
  /// `--dice-report-json`). The standard services drop it.
  virtual void recordResolved(llvm::json::Object resolved) const;

private:
  mutable std::mutex mutex;
  mutable std::map<std::string, ::dice::Result<::dice::Config>> configs;
  mutable std::map<std::string, std::shared_ptr<::dice::KernelStore>> stores;
};

/// The services of `context`'s driver, or the standard ones.
const DiceServices &getDiceServices(MLIRContext *context);

/// Every context made from `registry` gets the services `make` returns when
/// it loads the dice dialect.
void registerDiceServices(
    DialectRegistry &registry,
    std::function<std::unique_ptr<DiceServices>(Dialect *)> make);

} // namespace mlir::dice

MLIR_DECLARE_EXPLICIT_TYPE_ID(mlir::dice::DiceServices)

#endif // DICE_DRIVER_SERVICES_H
