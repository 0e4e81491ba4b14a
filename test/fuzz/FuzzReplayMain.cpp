//===- FuzzReplayMain.cpp - run a fuzz target over saved inputs -----------===//
//
// The main() of a fuzz target in a build without libFuzzer: every file named
// on the command line (folders are walked, in sorted order) is one input,
// run in a child process of its own so that a crash or a broken property
// fails that input alone and names it. `--junit FILE` writes the outcomes as
// JUnit XML, one test case per input, where scripts/test-summary.py counts
// them. Exits 1 when an input failed or none was found.
//
// Usage: dice-fuzz-<target> [--junit FILE] PATH...
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;

// Targets without state to build need not define it.
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int *, char ***);

namespace {

struct Outcome {
  std::string input;
  std::string failure; ///< empty when the input passed
  std::string log;     ///< what the child printed
};

std::vector<fs::path> inputsOf(const std::vector<std::string> &paths) {
  std::vector<fs::path> inputs;
  for (const std::string &path : paths) {
    if (fs::is_directory(path)) {
      std::vector<fs::path> found;
      for (const auto &entry : fs::recursive_directory_iterator(path))
        if (entry.is_regular_file())
          found.push_back(entry.path());
      std::sort(found.begin(), found.end());
      inputs.insert(inputs.end(), found.begin(), found.end());
    } else {
      inputs.emplace_back(path);
    }
  }
  return inputs;
}

std::string readAll(int fd) {
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      break;
    text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

Outcome runOne(const fs::path &input) {
  Outcome outcome{input.string(), "", ""};
  std::ifstream in(input, std::ios::binary);
  if (!in) {
    outcome.failure = "cannot read the input";
    return outcome;
  }
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  int pipeFds[2];
  if (pipe(pipeFds) != 0) {
    outcome.failure = std::string("pipe: ") + std::strerror(errno);
    return outcome;
  }
  std::cout.flush();
  std::fflush(nullptr);
  pid_t child = fork();
  if (child < 0) {
    outcome.failure = std::string("fork: ") + std::strerror(errno);
    return outcome;
  }
  if (child == 0) {
    close(pipeFds[0]);
    dup2(pipeFds[1], STDOUT_FILENO);
    dup2(pipeFds[1], STDERR_FILENO);
    close(pipeFds[1]);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()),
                           bytes.size());
    std::fflush(nullptr);
    _exit(0);
  }
  close(pipeFds[1]);
  outcome.log = readAll(pipeFds[0]);
  close(pipeFds[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status))
    outcome.failure = std::string("killed by signal ") +
                      std::to_string(WTERMSIG(status)) + " (" +
                      strsignal(WTERMSIG(status)) + ")";
  else if (WEXITSTATUS(status) != 0)
    outcome.failure = "exited with status " + std::to_string(WEXITSTATUS(status));
  return outcome;
}

std::string xmlEscape(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    switch (c) {
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '&': out += "&amp;"; break;
    case '"': out += "&quot;"; break;
    default:
      // XML 1.0 admits no other control characters.
      if (c < 0x20 && c != '\n' && c != '\t')
        out += '?';
      else
        out += static_cast<char>(c);
    }
  }
  return out;
}

bool writeJunit(const std::string &path, const std::string &suite,
                const std::vector<Outcome> &outcomes) {
  size_t failures = std::count_if(outcomes.begin(), outcomes.end(),
                                  [](const Outcome &o) { return !o.failure.empty(); });
  std::ostringstream xml;
  xml << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<testsuite name=\"" << xmlEscape(suite) << "\" tests=\""
      << outcomes.size() << "\" failures=\"" << failures << "\">\n";
  for (const Outcome &o : outcomes) {
    xml << "  <testcase classname=\"" << xmlEscape(suite) << "\" name=\""
        << xmlEscape(fs::path(o.input).filename().string()) << "\">";
    if (!o.failure.empty())
      xml << "<failure message=\"" << xmlEscape(o.failure) << "\">"
          << xmlEscape(o.log) << "</failure>";
    xml << "</testcase>\n";
  }
  xml << "</testsuite>\n";
  std::ofstream out(path, std::ios::trunc);
  out << xml.str();
  return static_cast<bool>(out.flush());
}

} // namespace

int main(int argc, char **argv) {
  std::string junit;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--junit" && i + 1 < argc)
      junit = argv[++i];
    else
      paths.push_back(arg);
  }
  if (paths.empty()) {
    std::cerr << "usage: " << argv[0] << " [--junit FILE] PATH...\n";
    return 2;
  }
  if (LLVMFuzzerInitialize)
    LLVMFuzzerInitialize(&argc, &argv);

  std::string suite = fs::path(argv[0]).filename().string();
  std::vector<Outcome> outcomes;
  for (const fs::path &input : inputsOf(paths)) {
    outcomes.push_back(runOne(input));
    const Outcome &o = outcomes.back();
    if (o.failure.empty()) {
      std::cout << "PASS " << o.input << "\n";
    } else {
      std::cout << "FAIL " << o.input << ": " << o.failure << "\n" << o.log;
    }
  }
  size_t failed = std::count_if(outcomes.begin(), outcomes.end(),
                                [](const Outcome &o) { return !o.failure.empty(); });
  std::cout << suite << ": " << outcomes.size() - failed << " of "
            << outcomes.size() << " inputs passed\n";
  if (!junit.empty() && !writeJunit(junit, suite, outcomes)) {
    std::cerr << "cannot write " << junit << "\n";
    return 1;
  }
  return failed || outcomes.empty() ? 1 : 0;
}
