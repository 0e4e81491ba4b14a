//===- dice-tokenize.cpp - the DICE tokenizer on JSON lines ---------------===//
//
// Reads one JSON value per line on stdin and writes one per line on stdout,
// so that scripts (and the parity tests) tokenize many texts in one process:
//
//   dice-tokenize --tokenizer DIR            "text"          -> [ids...]
//   dice-tokenize --tokenizer DIR --decode   [ids...]        -> "text"
//   dice-tokenize --tokenizer DIR --chat     "user"          -> "prompt"
//                                            ["user","answer"] -> "sample"
//   dice-tokenize --tokenizer DIR --benchmark FILE
//       encodes FILE repeatedly and prints {"tokens":..,"tokens_per_second":..}
//
//===----------------------------------------------------------------------===//

#include "dice/Model/Tokenizer.h"
#include "dice/Support/CommandLine.h"
#include "dice/Support/File.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

using json = nlohmann::json;

namespace {

enum class Mode { Encode, Decode, Chat, Benchmark };

/// The rendering of one --chat line, or false when the line is malformed.
bool renderChat(const dice::Tokenizer &tokenizer, const json &line,
                std::string &out) {
  if (line.is_string()) {
    out = tokenizer.applyChatTemplate(line.get<std::string>());
    return true;
  }
  if (line.is_array() && line.size() == 2 && line[0].is_string() &&
      line[1].is_string()) {
    out = tokenizer.applyChatTemplate(line[0].get<std::string>(),
                                      line[1].get<std::string>());
    return true;
  }
  return false;
}

int benchmark(const dice::Tokenizer &tokenizer, const std::string &path) {
  dice::Result<std::string> read = dice::readFile(path);
  if (!read) {
    std::fprintf(stderr, "%s\n", read.error().format().c_str());
    return 1;
  }
  std::string text = read.take();
  using Clock = std::chrono::steady_clock;
  // The first pass starts with an empty BPE cache; later ones find it full,
  // as in a long-running process.
  auto start = Clock::now();
  size_t tokens = tokenizer.encode(text).size();
  double firstSeconds =
      std::chrono::duration<double>(Clock::now() - start).count();
  size_t total = 0;
  int runs = 0;
  start = Clock::now();
  double seconds = 0;
  while (seconds < 1.0) {
    total += tokenizer.encode(text).size();
    ++runs;
    seconds = std::chrono::duration<double>(Clock::now() - start).count();
  }
  json result = {{"bytes", text.size()},
                 {"tokens", tokens},
                 {"runs", runs},
                 {"first_pass_tokens_per_second", tokens / firstSeconds},
                 {"tokens_per_second", total / seconds},
                 {"megabytes_per_second", runs * text.size() / seconds / 1e6}};
  std::cout << result.dump() << "\n";
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  dice::CommandLine cl(
      "dice-tokenize",
      "the DICE tokenizer on JSON lines, one value per line in and out",
      "--tokenizer <dir> [--decode | --chat | --benchmark <file>] "
      "< lines.jsonl",
      /*usageExitCode=*/2);
  std::string dir, benchmarkFile;
  bool decode = false, chat = false;
  cl.add_option("--tokenizer", dir,
                "the tokenizer folder (tokenizer.json, tokenizer_config.json)")
      ->type_name("dir")
      ->required();
  CLI::Option *decodeFlag = cl.add_flag(
      "--decode", decode, "decode: a line is an array of token ids, the reply "
                          "its text");
  CLI::Option *chatFlag = cl.add_flag(
      "--chat", chat, "render the chat template: a line is the user's text, "
                      "or a [user, answer] array for a training sample");
  cl.add_option("--benchmark", benchmarkFile,
                "encode the file repeatedly and print "
                "{\"tokens\":..,\"tokens_per_second\":..} instead of reading "
                "stdin")
      ->type_name("file")
      ->excludes(decodeFlag)
      ->excludes(chatFlag);
  decodeFlag->excludes(chatFlag);
  if (std::optional<int> exit = cl.parse(argc, argv))
    return *exit;
  Mode mode = !benchmarkFile.empty() ? Mode::Benchmark
              : decode               ? Mode::Decode
              : chat                 ? Mode::Chat
                                     : Mode::Encode;
  dice::Result<dice::Tokenizer> tokenizer = dice::Tokenizer::load(dir);
  if (!tokenizer) {
    std::fprintf(stderr, "%s\n", tokenizer.error().format().c_str());
    return 1;
  }
  if (mode == Mode::Benchmark)
    return benchmark(*tokenizer, benchmarkFile);

  std::ios::sync_with_stdio(false);
  std::string line;
  for (unsigned lineNo = 1; std::getline(std::cin, line); ++lineNo) {
    json input = json::parse(line, nullptr, /*allow_exceptions=*/false);
    auto fail = [&](const char *expected) {
      std::fprintf(stderr, "<stdin>:%u: error: expected %s\n", lineNo, expected);
      return 1;
    };
    if (input.is_discarded())
      return fail("one JSON value per line");
    switch (mode) {
    case Mode::Encode: {
      if (!input.is_string())
        return fail("a JSON string");
      std::cout << json(tokenizer->encode(input.get<std::string>())).dump()
                << '\n';
      break;
    }
    case Mode::Decode: {
      std::vector<int32_t> ids;
      bool ok = input.is_array();
      for (const json &id : input) {
        ok = ok && id.is_number_integer();
        if (ok)
          ids.push_back(id.get<int32_t>());
      }
      if (!ok)
        return fail("a JSON array of token ids");
      std::cout << json(tokenizer->decode(ids)).dump(
                       -1, ' ', false, json::error_handler_t::replace)
                << '\n';
      break;
    }
    case Mode::Chat: {
      std::string rendered;
      if (!renderChat(*tokenizer, input, rendered))
        return fail("a JSON string or a [user, answer] array of strings");
      std::cout << json(rendered).dump(-1, ' ', false,
                                       json::error_handler_t::replace)
                << '\n';
      break;
    }
    case Mode::Benchmark:
      break;
    }
  }
  return 0;
}
