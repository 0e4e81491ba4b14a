//===- ReplayInfillEngine.cpp - candidates recorded in a file -------------===//

#include "dice/Infill/ReplayInfillEngine.h"
#include "dice/Support/File.h"

#include <nlohmann/json.hpp>

#include <sstream>

namespace dice {

namespace {

/// One line's candidate, or why the line is not one.
std::string parseLine(const std::string &line, std::string &fingerprint,
                      Candidate &candidate) {
  // Parsed without exceptions: this library is linked into LLVM-built code.
  nlohmann::json object = nlohmann::json::parse(line, nullptr, false);
  if (object.is_discarded())
    return "not a JSON object";
  if (!object.is_object())
    return "expected a JSON object";
  for (auto it = object.begin(); it != object.end(); ++it)
    if (it.key() != "fingerprint" && it.key() != "candidate" &&
        it.key() != "cuda_source")
      return "unknown key '" + it.key() +
             "' (known: fingerprint, candidate, cuda_source)";
  auto fp = object.find("fingerprint");
  if (fp == object.end() || !fp->is_string() ||
      fp->get_ref<const std::string &>().empty())
    return "'fingerprint' must be a non-empty string";
  auto answer = object.find("candidate");
  auto source = object.find("cuda_source");
  if ((answer == object.end()) == (source == object.end()))
    return "needs exactly one of 'candidate' (a model answer) and "
           "'cuda_source'";
  auto text = answer != object.end() ? answer : source;
  if (!text->is_string())
    return "'" + text.key() + "' must be a string";
  fingerprint = fp->get<std::string>();
  candidate.text = text->get<std::string>();
  candidate.isCudaSource = source != object.end();
  candidate.stopped = true;
  return "";
}

} // namespace

Result<std::unique_ptr<ReplayInfillEngine>>
ReplayInfillEngine::load(const std::string &path) {
  Result<std::string> text = readFile(path);
  if (!text)
    return Error(path, "cannot open replay file");
  std::unique_ptr<ReplayInfillEngine> engine(new ReplayInfillEngine(path));
  std::istringstream in(*text);
  std::string line;
  for (unsigned number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    std::string fingerprint;
    Candidate candidate;
    if (std::string why = parseLine(line, fingerprint, candidate); !why.empty())
      return Error(path, number, 0, "", why);
    engine->byFingerprint[fingerprint].push_back(std::move(candidate));
  }
  return engine;
}

std::string ReplayInfillEngine::name() const {
  return "replay:" + path.substr(path.find_last_of('/') + 1);
}

Result<std::vector<Candidate>>
ReplayInfillEngine::generateCandidates(const InfillRequest &request, int,
                                       const SamplingConfig &) {
  auto it = byFingerprint.find(request.fingerprint);
  if (it == byFingerprint.end())
    return std::vector<Candidate>();
  return it->second;
}

} // namespace dice
