//===- EngineFactory.cpp - an InfillEngine from its spelling --------------===//

#include "dice/Infill/EngineFactory.h"

#include "dice/Infill/ReplayInfillEngine.h"

namespace dice {

namespace {

/// The last path component, without trailing slashes.
std::string baseName(std::string path) {
  while (path.size() > 1 && path.back() == '/')
    path.pop_back();
  return path.substr(path.find_last_of('/') + 1);
}

} // namespace

std::optional<EngineSpec> parseEngineSpec(const std::string &spelling,
                                          const Config &config,
                                          std::string &error) {
  EngineSpec spec;
  std::string_view text = spelling;
  if (text.substr(0, 7) == "replay:") {
    spec.kind = EngineSpec::Kind::Replay;
    spec.path = std::string(text.substr(7));
    if (spec.path.empty()) {
      error = "engine 'replay:' needs a file: replay:<file.jsonl>";
      return std::nullopt;
    }
    spec.modelId = "replay:" + baseName(spec.path);
    return spec;
  }
  if (text == "model" || text.substr(0, 6) == "model:") {
    spec.kind = EngineSpec::Kind::Model;
    spec.path = text == "model" ? config.modelPath : std::string(text.substr(6));
    if (spec.path.empty()) {
      error = "engine 'model' needs a model directory: set 'model' in "
              "dice.toml or use engine=model:<dir>";
      return std::nullopt;
    }
    spec.device = config.modelDevice;
    // What the engine calls itself once loaded (DiceInfillEngine's name).
    spec.modelId = "dice:" + baseName(spec.path);
    return spec;
  }
  error = "unknown engine '" + spelling +
          "' (known: replay:<file.jsonl>, model, model:<dir>)";
  return std::nullopt;
}

std::unique_ptr<InfillEngine> createInfillEngine(const EngineSpec &spec,
                                                 std::string &error) {
  if (spec.kind == EngineSpec::Kind::Replay)
    return ReplayInfillEngine::load(spec.path, error);
  return createModelInfillEngine(spec.path, spec.device, error);
}

} // namespace dice
