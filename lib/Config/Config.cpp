//===- Config.cpp - dice.toml configuration -------------------------------===//

#include "dice/Config/Config.h"
#include "dice/Config/ConfigSchema.h"
#include "dice/Config/TomlDocument.h"
#include "dice/Support/File.h"

namespace dice {

using schema::Field;
using schema::into;
using schema::Kind;
using schema::kUnbounded;
using schema::valueOf;

namespace {

/// A decoding key the checkpoint's generation_config.json may also give:
/// setting it records that the user chose it (applyGenerationDefaults in
/// ModelConfig.h then leaves it alone).
using UserSetKeys = decltype(SamplingConfig::userSet);
template <typename T>
auto decoding(T SamplingConfig::*member, bool UserSetKeys::*chosen) {
  return [member, chosen](Config &c, const toml::node &n) {
    c.sampling.*member = valueOf<T>(n);
    c.sampling.userSet.*chosen = true;
  };
}

template <typename T> auto sampling(T SamplingConfig::*member) {
  return into(&Config::sampling, member);
}
template <typename T> auto verifier(T VerifierConfig::*member) {
  return into(&Config::verifier, member);
}

/// `path` names a whole model; `base` and `adapter` name a base and the
/// adapter merged into it, always together.
Status checkModelKeys(const Config &config, const schema::KeyRegions &where,
                      const std::string &file) {
  if (!config.modelPath.empty() && where.count("model.base"))
    return schema::errorAt(file, where.at("model.base"), "model.base",
                           "give either model.path (a whole model) or "
                           "model.base and model.adapter (an adapter over its "
                           "base), not both");
  if (where.count("model.adapter") && config.modelBase.empty())
    return schema::errorAt(file, where.at("model.adapter"), "model.adapter",
                           "needs model.base, the checkpoint the adapter was "
                           "trained on");
  if (where.count("model.base") && config.modelAdapter.empty())
    return schema::errorAt(file, where.at("model.base"), "model.base",
                           "needs model.adapter (a model without one is "
                           "model.path)");
  return {};
}

/// Applies `root` onto `config`, then the checks that relate keys.
Status applyDocument(const toml::table &root, Config &config,
                     const std::string &file) {
  schema::KeyRegions where;
  if (Status ok =
          schema::applySchema(configFields(), root, config, file, &where);
      !ok)
    return ok;
  if (Status ok = checkConfigRelations(config, where, file); !ok)
    return ok;
  return checkModelKeys(config, where, file);
}

} // namespace

const std::vector<Field<Config>> &configFields() {
  static const std::vector<Field<Config>> fields = {
      {"model", "path", {Kind::String}, into(&Config::modelPath)},
      {"model", "base", {Kind::String}, into(&Config::modelBase)},
      {"model", "adapter", {Kind::String}, into(&Config::modelAdapter)},
      {"model",
       "device",
       {Kind::Choice, 0, 0, false, {"auto", "cuda", "cpu"}},
       into(&Config::modelDevice)},
      {"model",
       "dtype",
       {Kind::Choice, 0, 0, false, {"auto", "bfloat16", "float16", "float32"}},
       into(&Config::modelDType)},

      {"sampling",
       "block_length",
       {Kind::Integer, 1, 4096},
       sampling(&SamplingConfig::blockLength)},
      {"sampling",
       "denoising_steps",
       {Kind::Integer, 1, 4096},
       sampling(&SamplingConfig::denoisingSteps)},
      {"sampling",
       "remasking",
       {Kind::Choice, 0, 0, false, {"static", "dynamic", "sequential"}},
       [](Config &c, const toml::node &n) {
         std::string_view s = n.as_string()->get();
         c.sampling.remasking = s == "static"    ? Remasking::Static
                                : s == "dynamic" ? Remasking::Dynamic
                                                 : Remasking::Sequential;
       }},
      {"sampling",
       "threshold",
       {Kind::Float, 0, 1, true},
       sampling(&SamplingConfig::threshold)},
      {"sampling",
       "temperature",
       {Kind::Float, 0, 100},
       decoding(&SamplingConfig::temperature, &UserSetKeys::temperature)},
      {"sampling",
       "top_k",
       {Kind::Integer, 0, 1e9},
       decoding(&SamplingConfig::topK, &UserSetKeys::topK)},
      {"sampling",
       "top_p",
       {Kind::Float, 0, 1, true},
       decoding(&SamplingConfig::topP, &UserSetKeys::topP)},
      {"sampling",
       "max_tokens",
       {Kind::Integer, 1, 1 << 20},
       decoding(&SamplingConfig::maxTokens, &UserSetKeys::maxTokens)},
      {"sampling",
       "candidates",
       {Kind::Integer, 1, 1024},
       sampling(&SamplingConfig::candidates)},

      {"verifier",
       "trials",
       {Kind::Integer, 1, 1000},
       verifier(&VerifierConfig::trials)},
      {"verifier",
       "atol",
       {Kind::Float, 0, 1},
       verifier(&VerifierConfig::atol)},
      {"verifier",
       "rtol",
       {Kind::Float, 0, 1},
       verifier(&VerifierConfig::rtol)},
      {"verifier",
       "half_atol",
       {Kind::Float, 0, 1},
       verifier(&VerifierConfig::halfAtol)},
      {"verifier",
       "half_rtol",
       {Kind::Float, 0, 1},
       verifier(&VerifierConfig::halfRtol)},
      {"verifier",
       "comparison",
       {Kind::Choice, 0, 0, false, {"scaled", "kernelbench"}},
       [](Config &c, const toml::node &n) {
         c.verifier.comparison = n.as_string()->get() == "kernelbench"
                                     ? Comparison::KernelBench
                                     : Comparison::Scaled;
       }},
      {"verifier",
       "kernelbench_tolerance",
       {Kind::Float, 0, 1, true},
       verifier(&VerifierConfig::kernelbenchTolerance)},
      {"verifier",
       "timing_runs",
       {Kind::Integer, 1, 100000},
       verifier(&VerifierConfig::timingRuns)},
      {"verifier",
       "timing_precision",
       {Kind::Float, 0, 1},
       verifier(&VerifierConfig::timingPrecision)},
      {"verifier",
       "min_speedup",
       {Kind::Float, 0, kUnbounded, true},
       verifier(&VerifierConfig::minSpeedup)},
      {"verifier",
       "baseline",
       {Kind::Choice,
        0,
        0,
        false,
        {"eager", "measured_eager", "inductor", "fastest"},
        {"default-lowering"}},
       [](Config &c, const toml::node &n) {
         std::string_view name = n.as_string()->get();
         c.verifier.baseline = name == "inductor" ? Baseline::Inductor
                               : name == "measured_eager"
                                   ? Baseline::MeasuredEager
                               : name == "fastest" ? Baseline::Fastest
                                                   : Baseline::Eager;
       }},
      {"verifier",
       "baseline_times",
       {Kind::String},
       verifier(&VerifierConfig::baselineTimes)},
      {"verifier",
       "timeout_s",
       {Kind::Float, 0, 86400, true},
       verifier(&VerifierConfig::timeoutSeconds)},
      {"verifier",
       "workers",
       {Kind::Integer, 0, 4096},
       verifier(&VerifierConfig::workers)},
      {"verifier",
       "build_group",
       {Kind::Integer, 1, 64},
       verifier(&VerifierConfig::buildGroup)},

      {"prompt", "infill", {Kind::String}, into(&Config::promptInfill)},
      {"prompt", "end_to_end", {Kind::String}, into(&Config::promptEndToEnd)},

      {"database", "path", {Kind::String}, into(&Config::databasePath)},
      {"artifacts", "dir", {Kind::String}, into(&Config::artifactDir)},
  };
  return fields;
}

std::vector<std::pair<std::string, std::vector<std::string>>> configKeys() {
  std::vector<std::pair<std::string, std::vector<std::string>>> sections;
  for (const Field<Config> &f : configFields()) {
    if (sections.empty() || sections.back().first != f.section)
      sections.emplace_back(std::string(f.section), std::vector<std::string>());
    sections.back().second.emplace_back(f.key);
  }
  return sections;
}

Status checkConfigRelations(const Config &config,
                            const schema::KeyRegions &where,
                            const std::string &file) {
  if (config.sampling.denoisingSteps <= config.sampling.blockLength)
    return {};
  // At the key of the two that this document set, steps first.
  auto at = where.find("sampling.denoising_steps");
  if (at == where.end())
    at = where.find("sampling.block_length");
  return schema::errorAt(file,
                         at == where.end() ? toml::source_region{} : at->second,
                         "sampling.denoising_steps",
                         "must not exceed sampling.block_length (" +
                             std::to_string(config.sampling.blockLength) +
                             "): each step unmasks at least one token");
}

Result<Config> parseConfig(std::string_view text, std::string_view sourceName) {
  std::string file(sourceName);
  Result<toml::table> parsed = parseTomlDocument(text, file);
  if (!parsed)
    return parsed.error();
  Config config;
  if (Status applied = applyDocument(*parsed, config, file); !applied)
    return applied.error();
  return config;
}

Result<Config> loadConfigFile(const std::string &path) {
  Result<std::string> contents = readFile(path);
  if (!contents)
    return Error(path, "cannot open configuration file");
  return parseConfig(*contents, path);
}

Status applyConfigOverride(Config &config, std::string_view key,
                           std::string_view value) {
  Result<toml::table> parsed = schema::parseOverride(key, value, "<override>");
  if (!parsed)
    return parsed.error();
  Config updated = config;
  if (Status applied = applyDocument(*parsed, updated, "<override>");
      !applied) {
    Error error = applied.error();
    error.line = error.column = 0; // lines of the synthetic text mean nothing
    return error;
  }
  config = std::move(updated);
  return {};
}

std::string_view toString(Remasking remasking) {
  switch (remasking) {
  case Remasking::Static:
    return "static";
  case Remasking::Dynamic:
    return "dynamic";
  case Remasking::Sequential:
    return "sequential";
  }
  return "";
}

std::string_view toString(Baseline baseline) {
  switch (baseline) {
  case Baseline::Eager:
    return "eager";
  case Baseline::MeasuredEager:
    return "measured_eager";
  case Baseline::Inductor:
    return "inductor";
  case Baseline::Fastest:
    return "fastest";
  }
  return "";
}

std::string_view toString(Comparison comparison) {
  return comparison == Comparison::KernelBench ? "kernelbench" : "scaled";
}

} // namespace dice
