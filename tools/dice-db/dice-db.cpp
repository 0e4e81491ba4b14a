//===- dice-db.cpp - seed and inspect a kernel database -------------------===//
//
//   dice-db import <db> <records.jsonl>
//   dice-db list <db> --fingerprint F --model M [--gpu-arch sm_90]
//                     [--scaffold-version N]
//
// `import` stores one candidate per line:
//
//   {"fingerprint": "3f9a0c1d2e4b5a69", "model": "replay:k.jsonl",
//    "gpu_arch": "sm_90", "source": "<CUDA source>",
//    "verdict": {"status": "accepted", "kernel_ms": 0.1, "baseline_ms": 0.2},
//    "chosen": false, "artifact": "libs/3f9a.so"}
//
// `gpu_arch` defaults to sm_90, `scaffold_version` to this compiler's and
// `prompt_template` to "" (the built-in prompt templates).
// `artifact` (optional) is the candidate's kernel library, stored with it; a
// relative path is taken from the records file's folder.
// The verdict takes the keys of the verifier's verdict JSON; its fingerprint
// and candidate hash come from the record, and its speedup from the timings.
// Errors name file:line and leave the database as it was before that line.
// `list` prints one line per candidate of a key, in the order stored.
//
//===----------------------------------------------------------------------===//

#include "dice/KernelDB/KernelDatabase.h"
#include "dice/Scaffold/Scaffold.h"
#include "dice/Support/CommandLine.h"
#include "dice/Support/File.h"
#include "dice/Support/Sha256.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

namespace {

using nlohmann::json;

/// One record line as a key and a candidate; "" or why not.
std::string parseRecord(const std::string &line, const std::string &file,
                        dice::KernelKey &key, dice::CandidateRecord &record,
                        bool &chosen) {
  json object;
  try {
    object = json::parse(line);
  } catch (const json::exception &e) {
    return std::string("not JSON: ") + e.what();
  }
  if (!object.is_object())
    return "expected a JSON object";
  static const char *known[] = {"fingerprint", "model",  "gpu_arch",
                                "scaffold_version", "prompt_template",
                                "source", "verdict",
                                "chosen", "artifact"};
  for (auto it = object.begin(); it != object.end(); ++it)
    if (std::find(std::begin(known), std::end(known), it.key()) ==
        std::end(known))
      return "unknown key '" + it.key() + "'";
  try {
    key.fingerprint = object.at("fingerprint").get<std::string>();
    key.modelId = object.at("model").get<std::string>();
    key.gpuArch = object.value("gpu_arch", std::string("sm_90"));
    key.scaffoldVersion = object.value("scaffold_version", dice::kScaffoldVersion);
    key.promptTemplate = object.value("prompt_template", std::string());
    record.source = object.at("source").get<std::string>();
    chosen = object.value("chosen", false);
    json verdict = object.at("verdict");
    if (!verdict.is_object())
      return "'verdict' must be an object";
    record.candidateHash = dice::sha256Hex(record.source);
    verdict["fingerprint"] = key.fingerprint;
    verdict["candidate_hash"] = record.candidateHash;
    // Untimed verdicts (incorrect, crashed, ...) carry null timings, as
    // dice-verify --json writes them.
    bool timed = verdict.contains("kernel_ms") && verdict["kernel_ms"].is_number() &&
                 verdict.contains("baseline_ms") && verdict["baseline_ms"].is_number();
    double kernelMs = timed ? verdict["kernel_ms"].get<double>() : 0;
    double baselineMs = timed ? verdict["baseline_ms"].get<double>() : 0;
    if (timed && kernelMs > 0)
      verdict["speedup"] = baselineMs / kernelMs;
    dice::Result<dice::Verdict> parsed = dice::Verdict::fromJson(verdict.dump());
    if (!parsed)
      return "bad verdict: " + parsed.error().message;
    record.verdictJson = parsed->toJson();
    record.status = parsed->status;
    record.speedup = parsed->speedup;
    if (object.contains("artifact")) {
      std::filesystem::path path = object["artifact"].get<std::string>();
      if (path.is_relative())
        path = std::filesystem::path(file).parent_path() / path;
      dice::Result<std::string> library = dice::readFile(path.string());
      if (!library)
        return "cannot read artifact '" + path.string() +
               "': " + library.error().message;
      record.artifact.emplace(library->begin(), library->end());
      if (record.artifact->empty())
        return "artifact '" + path.string() + "' is empty";
    }
  } catch (const json::exception &e) {
    return std::string("bad record: ") + e.what();
  }
  return "";
}

int importRecords(const std::string &dbPath, const std::string &file) {
  std::ifstream in(file);
  if (!in) {
    std::cerr << file << ": error: cannot open\n";
    return 1;
  }
  dice::Result<dice::KernelDatabase> db = dice::KernelDatabase::open(dbPath);
  if (!db) {
    std::cerr << db.error().format() << "\n";
    return 1;
  }
  std::string line;
  unsigned count = 0;
  for (unsigned number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    dice::KernelKey key;
    dice::CandidateRecord record;
    bool chosen = false;
    if (std::string why = parseRecord(line, file, key, record, chosen); !why.empty()) {
      std::cerr << file << ":" << number << ": error: " << why << "\n";
      return 1;
    }
    if (dice::Status stored = db->put(key, record); !stored) {
      std::cerr << file << ":" << number << ": " << stored.error().format()
                << "\n";
      return 1;
    }
    if (chosen)
      if (dice::Status recorded = db->choose(key, record.candidateHash);
          !recorded) {
        std::cerr << file << ":" << number << ": " << recorded.error().format()
                  << "\n";
        return 1;
      }
    ++count;
  }
  std::cout << "imported " << count << " candidates into " << dbPath << "\n";
  return 0;
}

int listKey(const std::string &dbPath, const dice::KernelKey &key) {
  dice::Result<dice::KernelDatabase> db =
      dice::KernelDatabase::open(dbPath, dice::OpenMode::ReadOnly);
  if (!db) {
    std::cerr << db.error().format() << "\n";
    return 1;
  }
  auto candidates = db->candidates(key);
  if (!candidates) {
    std::cerr << candidates.error().format() << "\n";
    return 1;
  }
  auto chosen = db->chosen(key);
  if (!chosen) {
    std::cerr << chosen.error().format() << "\n";
    return 1;
  }
  for (const dice::CandidateRecord &c : *candidates) {
    char speedup[32] = "-";
    if (c.speedup)
      std::snprintf(speedup, sizeof speedup, "%.2fx", *c.speedup);
    bool isChosen = *chosen && (*chosen)->candidateHash == c.candidateHash;
    std::cout << c.candidateHash.substr(0, 12) << "  "
              << dice::verdictStatusName(c.status) << "  " << speedup
              << (c.hasArtifact ? "  artifact" : "")
              << (isChosen ? "  chosen" : "") << "\n";
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  dice::CommandLine cl("dice-db", "seeds and inspects kernel databases",
                       "<command> [options]", /*usageExitCode=*/2);
  cl.require_subcommand(1);
  std::string dbPath, records;

  CLI::App *import = cl.addCommand(
      "import", "stores one candidate per line of a records file",
      "<db> <records.jsonl>");
  import->add_option("db", dbPath, "the kernel database (created if absent)")
      ->required();
  import->add_option("records.jsonl", records,
                     "one JSON record per line: fingerprint, model, gpu_arch, "
                     "scaffold_version, prompt_template, source, verdict, chosen, "
                     "artifact")
      ->required();

  dice::KernelKey key;
  key.gpuArch = "sm_90";
  key.scaffoldVersion = dice::kScaffoldVersion;
  CLI::App *list = cl.addCommand(
      "list", "prints one line per candidate of a key, in the order stored",
      "<db> --fingerprint <fp> --model <id> [options]");
  list->add_option("db", dbPath, "the kernel database")->required();
  list->add_option("--fingerprint", key.fingerprint, "the request's fingerprint")
      ->type_name("fp")
      ->required();
  list->add_option("--model", key.modelId, "the engine's model id")
      ->type_name("id")
      ->required();
  list->add_option("--gpu-arch", key.gpuArch, "the GPU architecture")
      ->type_name("arch")
      ->capture_default_str();
  list->add_option("--scaffold-version", key.scaffoldVersion,
                   "the scaffold version")
      ->type_name("n")
      ->capture_default_str();
  list->add_option("--prompt-template", key.promptTemplate,
                   "the prompt templates' identity (default: the built-in ones)")
      ->type_name("id");

  if (std::optional<int> exit = cl.parse(argc, argv))
    return *exit;
  if (import->parsed())
    return importRecords(dbPath, records);
  return listKey(dbPath, key);
}
