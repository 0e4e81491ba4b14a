//===- Verdict.cpp - verdict JSON -----------------------------------------===//

#include "dice/VerifierCore/Verdict.h"

#include "dice/VerifierCore/VerdictNumbers.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <tuple>

namespace dice {

namespace {
using Json = nlohmann::json;

/// The floating-point measurements, by JSON key.
constexpr std::pair<const char *, std::optional<double> VerdictMeasurements::*>
    kFloatFields[] = {{"compile_ms", &Verdict::compileMs},
                      {"max_abs_err", &Verdict::maxAbsErr},
                      {"max_rel_err", &Verdict::maxRelErr},
                      {"kernel_ms", &Verdict::kernelMs},
                      {"baseline_ms", &Verdict::baselineMs},
                      {"speedup", &Verdict::speedup}};

constexpr std::pair<const char *, std::optional<int64_t> VerdictMeasurements::*>
    kCountFields[] = {{"trials", &Verdict::trials},
                      {"launched_kernels", &Verdict::launchedKernels}};

constexpr std::array<const char *, 17> kKeys = {
    "fingerprint", "candidate_hash", "status",      "reason",
    "compile_ms",  "max_abs_err",    "max_rel_err", "trials",
    "kernel_ms",   "baseline_ms",    "speedup",     "launched_kernels",
    "baselines",   "baseline",       "gpu",         "driver",
    "verifier_version"};

/// A number, or the string that spells a non-finite one.
Json numberJson(const std::optional<double> &v) {
  if (!v)
    return nullptr;
  if (std::string spelling = nonFiniteSpelling(*v); !spelling.empty())
    return spelling;
  return *v;
}
Json countJson(const std::optional<int64_t> &v) {
  return v ? Json(*v) : Json(nullptr);
}

Error fieldError(std::string key, std::string message) {
  Error error(std::move(message));
  error.key = std::move(key);
  return error;
}

/// Reads what toJson wrote into `v`; the first problem, or nothing.
std::optional<Error> readFields(const Json &in, Verdict &v) {
  for (const auto &[key, value] : in.items())
    if (std::find_if(kKeys.begin(), kKeys.end(), [&](const char *known) {
          return key == known;
        }) == kKeys.end())
      return fieldError(key, "unknown verdict key '" + key + "'");

  auto readString = [&](const char *key, std::string &into,
                        bool required) -> std::optional<Error> {
    auto it = in.find(key);
    if (it == in.end() || it->is_null()) {
      if (required)
        return fieldError(key, std::string("verdict needs '") + key + "'");
      return std::nullopt;
    }
    if (!it->is_string())
      return fieldError(key,
                        std::string("verdict '") + key + "' must be a string");
    into = it->get<std::string>();
    return std::nullopt;
  };
  std::string statusName;
  for (auto [key, into, required] :
       {std::tuple{"fingerprint", &v.fingerprint, true},
        std::tuple{"candidate_hash", &v.candidateHash, false},
        std::tuple{"status", &statusName, true},
        std::tuple{"reason", &v.reason, false},
        std::tuple{"baseline", &v.baseline, false},
        std::tuple{"gpu", &v.gpu, false},
        std::tuple{"driver", &v.driver, false}})
    if (std::optional<Error> error = readString(key, *into, required))
      return error;
  std::optional<VerdictStatus> status = parseVerdictStatus(statusName);
  if (!status)
    return fieldError("status", "unknown verdict status '" + statusName +
                                    "'; expected one of " +
                                    verdictStatusNames());
  v.status = *status;

  for (const auto &[name, field] : kFloatFields) {
    auto it = in.find(name);
    if (it == in.end() || it->is_null())
      continue;
    std::optional<double> value;
    if (it->is_number())
      value = it->get<double>();
    else if (it->is_string())
      value = parseNonFiniteSpelling(it->get<std::string>());
    if (!value)
      return fieldError(name, std::string("verdict metric '") + name +
                                  "' must be a number, \"inf\", \"-inf\" or "
                                  "\"nan\"");
    v.*field = value;
  }
  for (const auto &[name, field] : kCountFields) {
    auto it = in.find(name);
    if (it == in.end() || it->is_null())
      continue;
    if (!it->is_number_integer())
      return fieldError(name, std::string("verdict metric '") + name +
                                  "' must be an integer");
    v.*field = it->get<int64_t>();
  }
  if (auto it = in.find("baselines"); it != in.end() && !it->is_null()) {
    if (!it->is_object())
      return fieldError("baselines", "verdict 'baselines' must be an object "
                                     "of names and times in ms");
    for (const auto &[name, ms] : it->items()) {
      if (!ms.is_number() || !std::isfinite(ms.get<double>()) ||
          ms.get<double>() < 0)
        return fieldError("baselines", "verdict baseline '" + name +
                                           "' must be a finite time >= 0");
      v.baselines[name] = ms.get<double>();
    }
  }
  if (!v.baseline.empty() && !v.baselines.count(v.baseline))
    return fieldError("baseline", "verdict 'baseline' names '" + v.baseline +
                                      "', which 'baselines' does not hold");
  if (!v.baseline.empty() && v.baselineMs &&
      *v.baselineMs != v.baselines[v.baseline])
    return fieldError("baseline_ms", "verdict 'baseline_ms' is not the time "
                                     "of its 'baseline', '" + v.baseline + "'");
  if (auto it = in.find("verifier_version"); it != in.end() && !it->is_null()) {
    if (!it->is_number_integer())
      return fieldError("verifier_version",
                        "verdict 'verifier_version' must be an integer");
    v.verifierVersion = it->get<int>();
  }
  return std::nullopt;
}
} // namespace

void Verdict::setTimings(double kernel, double baseline) {
  kernelMs = kernel;
  baselineMs = baseline;
  speedup = kernel > 0 ? std::optional<double>(baseline / kernel) : std::nullopt;
}

std::string Verdict::validate() const {
  if (fingerprint.empty())
    return "verdict needs a fingerprint";
  if (std::optional<VerdictProblem> problem =
          checkVerdictConsistency(status, reason, *this))
    return problem->message;
  return "";
}

std::string Verdict::toJson() const {
  // nlohmann keeps insertion order only with ordered_json; the field order of
  // the design is what people read, so keep it.
  nlohmann::ordered_json out;
  out["fingerprint"] = fingerprint;
  out["candidate_hash"] = candidateHash;
  out["status"] = std::string(verdictStatusName(status));
  out["reason"] = reason;
  out["compile_ms"] = numberJson(compileMs);
  out["max_abs_err"] = numberJson(maxAbsErr);
  out["max_rel_err"] = numberJson(maxRelErr);
  out["trials"] = countJson(trials);
  out["kernel_ms"] = numberJson(kernelMs);
  out["baseline_ms"] = numberJson(baselineMs);
  out["speedup"] = numberJson(speedup);
  out["launched_kernels"] = countJson(launchedKernels);
  out["baselines"] = nlohmann::ordered_json(baselines);
  out["baseline"] = baseline;
  out["gpu"] = gpu;
  out["driver"] = driver;
  out["verifier_version"] = verifierVersion;
  return out.dump();
}

Result<Verdict> Verdict::fromJson(std::string_view text) {
  Json in = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (in.is_discarded())
    return Error("verdict is not valid JSON");
  if (!in.is_object())
    return Error("verdict is not a JSON object");
  Verdict v;
  if (std::optional<Error> error = readFields(in, v))
    return *error;
  if (v.fingerprint.empty())
    return fieldError("fingerprint", "verdict needs a fingerprint");
  if (std::optional<VerdictProblem> problem =
          checkVerdictConsistency(v.status, v.reason, v))
    return fieldError(problem->field, problem->message);
  return v;
}

} // namespace dice
