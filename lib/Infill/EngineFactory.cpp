//===- EngineFactory.cpp - an InfillEngine from its spelling --------------===//

#include "dice/Infill/EngineFactory.h"

#include "dice/Infill/ReplayInfillEngine.h"

#include <sys/stat.h>

#include <cstdlib>

namespace dice {

namespace {

bool holdsModel(const std::string &dir) {
  struct stat st;
  return stat((dir + "/config.json").c_str(), &st) == 0;
}

/// The last path component, without trailing slashes.
std::string baseName(std::string path) {
  while (path.size() > 1 && path.back() == '/')
    path.pop_back();
  return path.substr(path.find_last_of('/') + 1);
}

} // namespace

Result<std::string> defaultModelDir(const std::string &binFolder) {
  if (const char *env = std::getenv("DICE_DEFAULT_MODEL_DIR"); env && *env) {
    if (!holdsModel(env))
      return Error(std::string("DICE_DEFAULT_MODEL_DIR names no model (no ") + env +
                   "/config.json)");
    return std::string(env);
  }
  const std::string places[] = {binFolder + "/../../model/default",
                                binFolder + "/../share/dice/model/default",
                                DICE_DEFAULT_MODEL_DIR};
  for (const std::string &place : places)
    if (holdsModel(place)) {
      char *real = realpath(place.c_str(), nullptr);
      std::string resolved = real ? real : place;
      free(real);
      return resolved;
    }
  std::string looked;
  for (const std::string &place : places)
    looked += (looked.empty() ? "" : ", ") + place;
  return Error("no model is configured and the default model is missing (no "
               "config.json in " + looked + "): set 'model' in dice.toml, use "
               "engine=model:<dir>, or set DICE_DEFAULT_MODEL_DIR");
}

Result<EngineSpec> parseEngineSpec(const std::string &spelling,
                                   const Config &config) {
  EngineSpec spec;
  std::string_view text = spelling;
  if (text.substr(0, 7) == "replay:") {
    spec.kind = EngineSpec::Kind::Replay;
    spec.path = std::string(text.substr(7));
    if (spec.path.empty())
      return Error("engine 'replay:' needs a file: replay:<file.jsonl>");
    spec.modelId = "replay:" + baseName(spec.path);
    return spec;
  }
  if (text == "model" || text.substr(0, 6) == "model:") {
    spec.kind = EngineSpec::Kind::Model;
    spec.path = text == "model" ? config.modelPath : std::string(text.substr(6));
    if (text == "model" && !config.modelAdapter.empty()) {
      spec.path = config.modelBase;
      spec.adapter = config.modelAdapter;
    }
    if (text == "model:" && spec.path.empty())
      return Error("engine 'model:' needs a directory: model:<dir>");
    if (spec.path.empty()) {
      // No model configured: the project's own, shipped with the sources.
      Result<std::string> found = defaultModelDir(binaryFolder());
      if (!found)
        return found.error();
      spec.path = found.take();
    }
    spec.device = config.modelDevice;
    spec.dtype = config.modelDType;
    // What the engine calls itself once loaded (DiceInfillEngine's name).
    spec.modelId = "dice:" + baseName(spec.path) +
                   (spec.adapter.empty() ? "" : "+" + baseName(spec.adapter));
    return spec;
  }
  return Error("unknown engine '" + spelling +
               "' (known: replay:<file.jsonl>, model, model:<dir>)");
}

Result<std::unique_ptr<InfillEngine>>
createInfillEngine(const EngineSpec &spec) {
  if (spec.kind == EngineSpec::Kind::Model)
    return createModelInfillEngine(spec.path, spec.adapter, spec.device, spec.dtype);
  Result<std::unique_ptr<ReplayInfillEngine>> replay =
      ReplayInfillEngine::load(spec.path);
  if (!replay)
    return replay.error();
  return std::unique_ptr<InfillEngine>(replay.take());
}

} // namespace dice
