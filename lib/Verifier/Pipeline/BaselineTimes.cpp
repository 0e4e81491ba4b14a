//===- BaselineTimes.cpp - the speed to beat, measured elsewhere ----------===//

#include "dice/Verifier/BaselineTimes.h"

#include "dice/Support/File.h"

#include <nlohmann/json.hpp>

#include <cmath>

namespace dice {

namespace {

Error keyError(const std::string &source, std::string key,
               std::string message) {
  return Error(source, 0, 0, std::move(key), std::move(message));
}

} // namespace

Result<BaselineTimes> parseBaselineTimes(const std::string &text,
                                         const std::string &sourceName) {
  nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded() || !json.is_object())
    return keyError(sourceName, "", "not a JSON object");
  if (!json.contains("version") || json["version"] != 1)
    return keyError(sourceName, "version", "must be 1");
  if (!json.contains("times") || !json["times"].is_object())
    return keyError(sourceName, "times", "must be an object of fingerprints");
  BaselineTimes times;
  for (const auto &[fingerprint, entry] : json["times"].items()) {
    std::string where = "times." + fingerprint;
    if (!entry.is_object())
      return keyError(sourceName, where, "must be an object");
    BaselineTime time;
    for (auto [name, slot] : {std::pair{"inductor_ms", &time.inductorMs},
                              std::pair{"eager_ms", &time.eagerMs}}) {
      if (!entry.contains(name))
        continue;
      if (!entry[name].is_number())
        return keyError(sourceName, where + "." + name, "must be a number");
      double ms = entry[name].get<double>();
      if (!std::isfinite(ms) || ms <= 0)
        return keyError(sourceName, where + "." + name,
                        "must be a positive time in milliseconds");
      *slot = ms;
    }
    if (!time.inductorMs && !time.eagerMs)
      return keyError(sourceName, where,
                      "needs inductor_ms or eager_ms (or both)");
    times[fingerprint] = time;
  }
  return times;
}

Result<BaselineTimes> loadBaselineTimes(const std::string &path) {
  Result<std::string> text = readFile(path);
  if (!text)
    return text.error();
  return parseBaselineTimes(*text, path);
}

} // namespace dice
