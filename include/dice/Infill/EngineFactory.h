//===- EngineFactory.h - an InfillEngine from its spelling -------*- C++ -*-===//
//
// The compiler names engines in pass options and dice.toml:
//
//   replay:<file.jsonl>   candidates recorded in a file (ReplayInfillEngine)
//   model                 the DICE model at dice.toml's `model` (a
//                         path, or a base and an adapter)
//   model:<dir>           the DICE model in <dir>
//
// The model runtime is LibTorch; builds without it (DICE_ENABLE_TORCH off)
// link a stand-in that says so instead of loading anything.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_INFILL_ENGINEFACTORY_H
#define DICE_INFILL_ENGINEFACTORY_H

#include "dice/Config/Config.h"
#include "dice/Infill/InfillEngine.h"

#include <memory>
#include <string>

namespace dice {

/// What an engine spelling names, resolved against the configuration.
struct EngineSpec {
  enum class Kind { Replay, Model } kind = Kind::Model;
  std::string path; ///< the replay file or the model directory
  std::string adapter; ///< an adapter folder merged into the model; may be empty
  std::string device = "auto"; ///< the model's: "auto", "cuda" or "cpu"
  std::string dtype = "auto";  ///< the model's compute type ([model] dtype)
  /// The kernel database's model id ("replay:kernels.jsonl", "dice:DICE-8B"):
  /// known without loading anything, so a warm database needs no model.
  std::string modelId;
};

/// Parses `spelling`, or says why it names no engine.
Result<EngineSpec> parseEngineSpec(const std::string &spelling,
                                   const Config &config);

/// Loads the engine. Failures (a missing file, a broken checkpoint, a build
/// without the model runtime) are returned, never thrown.
Result<std::unique_ptr<InfillEngine>>
createInfillEngine(const EngineSpec &spec);

/// The embedded DICE model, or why it cannot be had (ModelEngineLoader.cpp
/// opens the model runtime).
Result<std::unique_ptr<InfillEngine>>
createModelInfillEngine(const std::string &modelDir, const std::string &adapterDir,
                        const std::string &device, const std::string &dtype);

/// The folder of the executable or shared library that holds this code
/// (build/bin for build/bin/dice-opt): where the tools look for what ships
/// beside them, so that a build copied to another machine finds that
/// machine's files rather than the build machine's.
std::string binaryFolder();

/// The model `engine=model` loads when dice.toml names none: the first of
/// $DICE_DEFAULT_MODEL_DIR (an error if it holds no model), the checkout
/// the binary sits in (<checkout>/<build>/bin -> <checkout>/model/default),
/// an installation's share/dice/model/default, and the source tree the
/// build was made from; or an error naming every place looked at.
/// `binFolder` is the binary's folder (binaryFolder()).
Result<std::string> defaultModelDir(const std::string &binFolder);

} // namespace dice

#endif // DICE_INFILL_ENGINEFACTORY_H
