//===- Verdict.cpp - verdict JSON and its consistency rules ---------------===//

#include "dice/VerifierCore/Verdict.h"

#include "dice/Scaffold/ReferenceProgram.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>

namespace dice {

namespace {
using Json = nlohmann::json;

struct StatusName {
  VerdictStatus status;
  std::string_view name;
};

constexpr std::array<StatusName, 7> kStatusNames = {{
    {VerdictStatus::Accepted, "accepted"},
    {VerdictStatus::Slow, "slow"},
    {VerdictStatus::Incorrect, "incorrect"},
    {VerdictStatus::Deceptive, "deceptive"},
    {VerdictStatus::CompileError, "compile_error"},
    {VerdictStatus::Crashed, "crashed"},
    {VerdictStatus::Unverified, "unverified"},
}};

bool carriesTimings(VerdictStatus status) {
  return status == VerdictStatus::Accepted || status == VerdictStatus::Slow;
}

/// Statuses for which none of the candidate's code ran.
bool nothingRan(VerdictStatus status) {
  return status == VerdictStatus::CompileError ||
         status == VerdictStatus::Unverified;
}

/// The floating-point measurements, by JSON key.
std::array<std::pair<const char *, std::optional<double> Verdict::*>, 6>
    kFloatFields = {{{"compile_ms", &Verdict::compileMs},
                     {"max_abs_err", &Verdict::maxAbsErr},
                     {"max_rel_err", &Verdict::maxRelErr},
                     {"kernel_ms", &Verdict::kernelMs},
                     {"baseline_ms", &Verdict::baselineMs},
                     {"speedup", &Verdict::speedup}}};

std::array<std::pair<const char *, std::optional<int64_t> Verdict::*>, 2>
    kCountFields = {{{"trials", &Verdict::trials},
                     {"launched_kernels", &Verdict::launchedKernels}}};

Json optionalJson(const std::optional<double> &v) {
  return v ? Json(*v) : Json(nullptr);
}
Json optionalJson(const std::optional<int64_t> &v) {
  return v ? Json(*v) : Json(nullptr);
}
} // namespace

std::string_view verdictStatusName(VerdictStatus status) {
  for (const StatusName &entry : kStatusNames)
    if (entry.status == status)
      return entry.name;
  return "unverified";
}

std::optional<VerdictStatus> parseVerdictStatus(std::string_view name) {
  for (const StatusName &entry : kStatusNames)
    if (entry.name == name)
      return entry.status;
  return std::nullopt;
}

void Verdict::setTimings(double kernel, double baseline) {
  kernelMs = kernel;
  baselineMs = baseline;
  speedup = kernel > 0 ? std::optional<double>(baseline / kernel) : std::nullopt;
}

std::string Verdict::validate() const {
  std::string statusName(verdictStatusName(status));
  if (fingerprint.empty())
    return "verdict needs a fingerprint";
  for (const auto &[name, field] : kFloatFields) {
    const std::optional<double> &value = this->*field;
    if (value && (!std::isfinite(*value) || *value < 0))
      return std::string("verdict metric '") + name +
             "' must be finite and non-negative, got " + formatFloat(*value);
  }
  for (const auto &[name, field] : kCountFields)
    if ((this->*field) && *(this->*field) < 0)
      return std::string("verdict metric '") + name +
             "' must be non-negative, got " + std::to_string(*(this->*field));

  if (status != VerdictStatus::Accepted && reason.empty())
    return statusName + " verdict needs a reason a user can act on";

  if (carriesTimings(status)) {
    for (const auto &[name, field] :
         {std::pair{"kernel_ms", &kernelMs}, std::pair{"baseline_ms", &baselineMs},
          std::pair{"speedup", &speedup}})
      if (!*field)
        return statusName + " verdict needs '" + name + "'";
    if (*kernelMs <= 0)
      return statusName + " verdict needs a positive 'kernel_ms'";
    double implied = *baselineMs / *kernelMs;
    // Timings may have been rounded when written; allow that, nothing more,
    // so an edited speedup cannot disagree with its timings.
    if (std::abs(*speedup - implied) > 1e-3 * std::max(1.0, implied))
      return "verdict speedup " + formatFloat(*speedup) +
             " does not match baseline_ms / kernel_ms = " + formatFloat(implied);
  }

  if (nothingRan(status))
    for (const auto &[name, field] :
         {std::pair{"kernel_ms", &kernelMs}, std::pair{"baseline_ms", &baselineMs},
          std::pair{"speedup", &speedup}})
      if (*field)
        return statusName + " verdict cannot carry '" + name +
               "': no candidate code ran";
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
  out["compile_ms"] = optionalJson(compileMs);
  out["max_abs_err"] = optionalJson(maxAbsErr);
  out["max_rel_err"] = optionalJson(maxRelErr);
  out["trials"] = optionalJson(trials);
  out["kernel_ms"] = optionalJson(kernelMs);
  out["baseline_ms"] = optionalJson(baselineMs);
  out["speedup"] = optionalJson(speedup);
  out["launched_kernels"] = optionalJson(launchedKernels);
  out["gpu"] = gpu;
  out["driver"] = driver;
  out["verifier_version"] = verifierVersion;
  return out.dump();
}

std::optional<Verdict> Verdict::fromJson(std::string_view text,
                                         std::string &error) {
  Json in = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (in.is_discarded() || !in.is_object()) {
    error = "verdict is not a JSON object";
    return std::nullopt;
  }
  static const std::array<const char *, 15> kKeys = {
      "fingerprint", "candidate_hash", "status",      "reason",
      "compile_ms",  "max_abs_err",    "max_rel_err", "trials",
      "kernel_ms",   "baseline_ms",    "speedup",     "launched_kernels",
      "gpu",         "driver",         "verifier_version"};
  for (const auto &[key, value] : in.items())
    if (std::find_if(kKeys.begin(), kKeys.end(), [&](const char *known) {
          return key == known;
        }) == kKeys.end()) {
      error = "unknown verdict key '" + key + "'";
      return std::nullopt;
    }

  Verdict v;
  auto readString = [&](const char *key, std::string &into, bool required) {
    auto it = in.find(key);
    if (it == in.end() || it->is_null()) {
      if (required)
        error = std::string("verdict needs '") + key + "'";
      return !required;
    }
    if (!it->is_string()) {
      error = std::string("verdict '") + key + "' must be a string";
      return false;
    }
    into = it->get<std::string>();
    return true;
  };
  std::string statusName;
  if (!readString("fingerprint", v.fingerprint, true) ||
      !readString("candidate_hash", v.candidateHash, false) ||
      !readString("status", statusName, true) ||
      !readString("reason", v.reason, false) ||
      !readString("gpu", v.gpu, false) || !readString("driver", v.driver, false))
    return std::nullopt;
  std::optional<VerdictStatus> status = parseVerdictStatus(statusName);
  if (!status) {
    error = "unknown verdict status '" + statusName + "'";
    return std::nullopt;
  }
  v.status = *status;

  for (const auto &[name, field] : kFloatFields) {
    auto it = in.find(name);
    if (it == in.end() || it->is_null())
      continue;
    if (!it->is_number()) {
      error = std::string("verdict metric '") + name + "' must be a number";
      return std::nullopt;
    }
    v.*field = it->get<double>();
  }
  for (const auto &[name, field] : kCountFields) {
    auto it = in.find(name);
    if (it == in.end() || it->is_null())
      continue;
    if (!it->is_number_integer()) {
      error = std::string("verdict metric '") + name + "' must be an integer";
      return std::nullopt;
    }
    v.*field = it->get<int64_t>();
  }
  if (auto it = in.find("verifier_version"); it != in.end() && !it->is_null()) {
    if (!it->is_number_integer()) {
      error = "verdict 'verifier_version' must be an integer";
      return std::nullopt;
    }
    v.verifierVersion = it->get<int>();
  }

  if (std::string problem = v.validate(); !problem.empty()) {
    error = problem;
    return std::nullopt;
  }
  return v;
}

} // namespace dice
