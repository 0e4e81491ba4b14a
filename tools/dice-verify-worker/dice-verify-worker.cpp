//===- dice-verify-worker.cpp - the GPU checks of candidate kernels -------===//
//
// A long-lived worker process that a supervisor (the verifier's worker pool)
// starts, feeds and replaces:
//
//   dice-verify-worker --scratch <dir> [--device cuda|cpu]
//
// Requests are JSON lines on stdin; replies are JSON lines on fd 3, so that
// whatever a candidate prints to stdout or stderr (the supervisor's log
// file) cannot corrupt them. The first line on fd 3 is the ready message.
// After a reply with `"exit": true` the worker exits; a candidate that
// crashes or hangs the process is the supervisor's to detect.
// docs/verifier.md ("Dynamic checks and timing") describes the protocol and
// the checks.
//
//===----------------------------------------------------------------------===//

#include "dice/Support/CommandLine.h"
#include "dice/VerifierWorker/DynamicCheck.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <string>
#include <unistd.h>

using Json = nlohmann::json;

namespace {

constexpr int kPoisonedExitCode = 3;

/// Writes one JSON line to the reply descriptor; false when it is gone.
bool writeLine(int fd, const Json &message) {
  std::string line = message.dump(-1, ' ', false,
                                  Json::error_handler_t::replace) +
                     "\n";
  const char *data = line.data();
  size_t left = line.size();
  while (left) {
    ssize_t n = write(fd, data, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    data += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

/// Reads request lines from a descriptor.
class LineReader {
public:
  explicit LineReader(int fd) : fd(fd) {}

  bool next(std::string &line) {
    while (true) {
      size_t newline = buffer.find('\n');
      if (newline != std::string::npos) {
        line = buffer.substr(0, newline);
        buffer.erase(0, newline + 1);
        return true;
      }
      char chunk[65536];
      ssize_t n = read(fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        if (buffer.empty())
          return false;
        line.swap(buffer);
        buffer.clear();
        return true;
      }
      buffer.append(chunk, static_cast<size_t>(n));
    }
  }

private:
  int fd;
  std::string buffer;
};

bool isIdentifier(const std::string &text) {
  if (text.empty())
    return false;
  for (char c : text)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      return false;
  return true;
}

/// Reads a request; on failure returns false and sets `error`.
bool parseRequest(const Json &json, dice::DynamicCheckRequest &request,
                  std::string &error) {
  static const std::set<std::string> known = {
      "id",    "library",   "operator",  "fingerprint", "candidate_hash",
      "program", "trials",  "atol",      "rtol",        "half_atol",
      "half_rtol", "timing_runs", "timing_precision", "seed", "min_speedup", "baseline_ms",
      "baseline_measure", "baselines", "time_reference", "comparison",
      "kernelbench_tolerance", "lock_wait_s", "library_operators"};
  for (auto it = json.begin(); it != json.end(); ++it)
    if (!known.count(it.key())) {
      error = "unknown request key \"" + it.key() + "\"";
      return false;
    }
  auto string = [&](const char *key, std::string &out, bool required) {
    if (!json.contains(key)) {
      if (required)
        error = std::string("missing \"") + key + "\"";
      return !required;
    }
    if (!json[key].is_string()) {
      error = std::string("\"") + key + "\" must be a string";
      return false;
    }
    out = json[key].get<std::string>();
    return true;
  };
  auto real = [&](const char *key, double &out, double minimum) {
    if (!json.contains(key))
      return true;
    const Json &value = json[key];
    if (!value.is_number() || !std::isfinite(value.get<double>()) ||
        value.get<double>() < minimum) {
      error = std::string("\"") + key + "\" must be a finite number >= " +
              std::to_string(minimum);
      return false;
    }
    out = value.get<double>();
    return true;
  };
  auto integer = [&](const char *key, int64_t &out, int64_t minimum) {
    if (!json.contains(key))
      return true;
    const Json &value = json[key];
    if (!value.is_number_integer() || value.get<int64_t>() < minimum) {
      error = std::string("\"") + key + "\" must be an integer >= " +
              std::to_string(minimum);
      return false;
    }
    out = value.get<int64_t>();
    return true;
  };
  if (!string("library", request.library, true) ||
      !string("operator", request.operatorName, true) ||
      !string("fingerprint", request.fingerprint, true) ||
      !string("candidate_hash", request.candidateHash, false))
    return false;
  if (json.contains("library_operators")) {
    const Json &names = json["library_operators"];
    bool valid = names.is_array();
    for (const Json &name : names)
      valid = valid && name.is_string() &&
              isIdentifier(name.get<std::string>());
    if (!valid) {
      error = "\"library_operators\" must be a list of operator names";
      return false;
    }
    for (const Json &name : names)
      request.libraryOperators.push_back(name.get<std::string>());
  }
  if (request.library.empty() || request.library[0] != '/') {
    error = "\"library\" must be an absolute path";
    return false;
  }
  if (!isIdentifier(request.fingerprint) ||
      request.operatorName != "k_" + request.fingerprint) {
    error = "\"operator\" must be \"k_<fingerprint>\" with a fingerprint of "
            "letters, digits and underscores";
    return false;
  }
  int64_t seed = 0;
  if (!integer("trials", request.trials, 1) ||
      !integer("timing_runs", request.timingRuns, 1) ||
      !real("timing_precision", request.timingPrecision, 0) ||
      !integer("seed", seed, 0) || !real("atol", request.atol, 0) ||
      !real("rtol", request.rtol, 0) ||
      !real("half_atol", request.halfAtol, 0) ||
      !real("half_rtol", request.halfRtol, 0) ||
      !real("kernelbench_tolerance", request.kernelbenchTolerance, 0) ||
      !real("min_speedup", request.minSpeedup, 0) ||
      !real("lock_wait_s", request.lockWaitSeconds, 0))
    return false;
  if (json.contains("comparison")) {
    const Json &comparison = json["comparison"];
    if (!comparison.is_string() ||
        (comparison != "scaled" && comparison != "kernelbench")) {
      error = "\"comparison\" must be \"scaled\" or \"kernelbench\"";
      return false;
    }
    request.comparison = comparison == "kernelbench"
                             ? dice::Comparison::KernelBench
                             : dice::Comparison::Scaled;
  }
  request.seed = static_cast<uint64_t>(seed);
  if (json.contains("baseline_ms") && !json["baseline_ms"].is_null()) {
    double baseline = 0;
    if (!real("baseline_ms", baseline, 0))
      return false;
    if (baseline <= 0) {
      error = "\"baseline_ms\" must be positive";
      return false;
    }
    request.givenBaselines["given"] = baseline;
    request.timeReference = false;
  }
  bool haveBaselines = !request.givenBaselines.empty();
  if (json.contains("baselines")) {
    const Json &baselines = json["baselines"];
    if (!baselines.is_object()) {
      error = "\"baselines\" must be an object of names and times in ms";
      return false;
    }
    for (auto it = baselines.begin(); it != baselines.end(); ++it) {
      if (!it->is_number() || !std::isfinite(it->get<double>()) ||
          it->get<double>() <= 0 || !isIdentifier(it.key()) ||
          it.key() == "reference") {
        error = "\"baselines\" entry \"" + it.key() +
                "\" must be a positive time in ms under a name of letters, "
                "digits and underscores other than \"reference\"";
        return false;
      }
      request.givenBaselines[it.key()] = it->get<double>();
    }
    haveBaselines = true;
  }
  if (json.contains("time_reference")) {
    if (!json["time_reference"].is_boolean()) {
      error = "\"time_reference\" must be true or false";
      return false;
    }
    request.timeReference = json["time_reference"].get<bool>();
  }
  if (!request.timeReference && request.givenBaselines.empty()) {
    error = "\"time_reference\": false needs a baseline time "
            "(\"baseline_ms\" or \"baselines\")";
    return false;
  }
  if (json.contains("baseline_measure")) {
    const Json &measure = json["baseline_measure"];
    if (!measure.is_string() ||
        (measure != "device_time" && measure != "event_time")) {
      error = "\"baseline_measure\" must be \"device_time\" or \"event_time\"";
      return false;
    }
    if (!haveBaselines) {
      error = "\"baseline_measure\" needs \"baseline_ms\" or \"baselines\"";
      return false;
    }
    request.baselineIsDeviceTime = measure == "device_time";
  }
  if (!json.contains("program") || !json["program"].is_object()) {
    error = "\"program\" must be a reference program object";
    return false;
  }
  dice::Result<dice::ReferenceProgram> program =
      dice::ReferenceProgram::fromJson(json["program"].dump());
  if (!program) {
    error = "program: " + program.error().describe();
    return false;
  }
  request.program = program.take();
  return true;
}

Json optionalNumber(const std::optional<double> &value) {
  return value ? Json(*value) : Json(nullptr);
}

} // namespace

int main(int argc, char **argv) {
  dice::CommandLine cl(
      "dice-verify-worker",
      "the GPU checks of candidate kernels for the verifier's worker pool: "
      "reads JSON requests on stdin, writes JSON replies on fd 3",
      "--scratch <dir> [--device cuda|cpu]", /*usageExitCode=*/2);
  std::string scratch;
  std::string deviceName = "cuda";
  cl.add_option("--scratch", scratch,
                "the worker's working directory (candidates' files)")
      ->type_name("dir")
      ->required();
  cl.add_option("--device", deviceName,
                "cuda checks and times kernels; cpu only runs host code")
      ->type_name("cuda|cpu")
      ->check(dice::oneOf({"cuda", "cpu"}))
      ->capture_default_str();
  if (std::optional<int> exit = cl.parse(argc, argv))
    return *exit;

  // The protocol's descriptors move out of a candidate's reach: replies to a
  // private copy of fd 3, requests to a private copy of stdin, and fd 0 and
  // fd 3 are left reading /dev/null and closed, so a candidate's stray read
  // or write cannot take a request or forge a reply.
  int replyFd = fcntl(3, F_DUPFD_CLOEXEC, 10);
  if (replyFd < 0) {
    std::fprintf(stderr,
                 "dice-verify-worker: fd 3 (the reply channel) is not open\n");
    return 2;
  }
  close(3);
  int requestFd = fcntl(0, F_DUPFD_CLOEXEC, 10);
  if (int null = open("/dev/null", O_RDONLY); null >= 0) {
    dup2(null, 0);
    close(null);
  }
  if (requestFd < 0) {
    writeLine(replyFd, {{"ready", false},
                        {"error", "stdin (the request channel) is not open"},
                        {"pid", getpid()}});
    return 2;
  }

  Json ready = {{"pid", getpid()}, {"device", deviceName}};
  if (chdir(scratch.c_str()) != 0) {
    ready["ready"] = false;
    ready["error"] = "cannot enter the scratch directory " + scratch + ": " +
                     std::strerror(errno);
    writeLine(replyFd, ready);
    return 1;
  }
  dice::Result<std::unique_ptr<dice::DynamicChecker>> created =
      dice::createDynamicChecker(deviceName == "cuda" ? dice::CheckDevice::Cuda
                                                      : dice::CheckDevice::Cpu);
  if (!created) {
    ready["ready"] = false;
    ready["error"] = created.error().message;
    writeLine(replyFd, ready);
    return 1;
  }
  std::unique_ptr<dice::DynamicChecker> checker = created.take();
  const dice::CheckerInfo &info = checker->info();
  ready["ready"] = true;
  ready["gpu"] = info.gpu;
  ready["driver"] = info.driver;
  ready["bandwidth_gbs"] = optionalNumber(info.bandwidthGBs);
  ready["peak_tflops"] = optionalNumber(info.peakTflops);
  ready["tracing"] = info.tracing;
  ready["warm_up"] = info.warmUp;
  ready["verifier_version"] = dice::kVerifierVersion;
  if (!writeLine(replyFd, ready))
    return 1;
  std::fprintf(stderr, "dice-verify-worker: ready (%s, tracing: %s, warm-up: %s)\n",
               info.gpu.empty() ? deviceName.c_str() : info.gpu.c_str(),
               info.tracing.c_str(), info.warmUp.c_str());

  LineReader requests(requestFd);
  std::string line;
  while (requests.next(line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    Json reply = {{"id", nullptr}};
    Json json = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded() || !json.is_object()) {
      reply["error"] = "malformed request: not a JSON object";
      reply["exit"] = false;
      writeLine(replyFd, reply);
      continue;
    }
    if (json.contains("id") && json["id"].is_number_integer())
      reply["id"] = json["id"];
    dice::DynamicCheckRequest request;
    std::string error;
    if (!json.contains("id") || !json["id"].is_number_integer()) {
      error = "\"id\" must be an integer";
    } else if (!parseRequest(json, request, error)) {
      // error is set
    } else {
      error.clear();
    }
    if (!error.empty()) {
      reply["error"] = "malformed request: " + error;
      reply["exit"] = false;
      writeLine(replyFd, reply);
      continue;
    }

    std::fprintf(stderr, "dice-verify-worker: request %lld: %s\n",
                 static_cast<long long>(json["id"].get<int64_t>()),
                 request.library.c_str());
    std::fflush(stderr);
    dice::DynamicCheckOutcome outcome = checker->check(request);
    if (!outcome.retryError.empty()) {
      reply["error"] = outcome.retryError;
      reply["retry"] = true;
      reply["exit"] = true;
      writeLine(replyFd, reply);
      std::fflush(nullptr);
      std::_Exit(kPoisonedExitCode);
    }
    // Where the check's time went, for the log (docs/verifier.md).
    std::string phases = outcome.details.contains("phase_ms")
                             ? " " + outcome.details["phase_ms"].dump()
                             : "";
    reply["verdict"] = Json::parse(outcome.verdict.toJson());
    reply["details"] = std::move(outcome.details);
    reply["exit"] = outcome.contextPoisoned;
    std::fprintf(stderr, "dice-verify-worker: request %lld: %s%s\n",
                 static_cast<long long>(json["id"].get<int64_t>()),
                 std::string(dice::verdictStatusName(outcome.verdict.status))
                     .c_str(),
                 phases.c_str());
    bool written = writeLine(replyFd, reply);
    if (outcome.contextPoisoned || !written) {
      std::fflush(nullptr);
      std::_Exit(kPoisonedExitCode);
    }
  }
  // No teardown: the process holds candidates' libraries, whose static
  // destructors are not worth running (or trusting) on the way out.
  std::fflush(nullptr);
  std::_Exit(0);
}
