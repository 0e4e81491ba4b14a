//===- OverlappedNvcc.cpp - nvcc's host and device front ends at once -----===//

#include "OverlappedNvcc.h"

#include <algorithm>
#include <regex>
#include <sstream>
#include <vector>

namespace dice {
namespace {

/// A step's tool: the first word of its command, without quotes and
/// directories ("$CICC_PATH/cicc" -> "cicc").
std::string toolOf(const std::string &command) {
  std::string word = command.substr(0, command.find(' '));
  word.erase(std::remove(word.begin(), word.end(), '"'), word.end());
  size_t slash = word.rfind('/');
  return slash == std::string::npos ? word : word.substr(slash + 1);
}

/// Single-quotes `text` for bash.
std::string quoted(const std::string &text) {
  std::string out = "'";
  for (char c : text)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

} // namespace

std::optional<std::string> overlappedNvccScript(const std::string &dryRun,
                                                const std::string &hostLog,
                                                const std::string &deviceLog) {
  static const std::regex assignment("^[A-Za-z_][A-Za-z0-9_]*=.*");
  std::vector<std::string> settings, commands;
  std::istringstream lines(dryRun);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("#$ ", 0) != 0)
      continue;
    std::string step = line.substr(3);
    if (std::regex_match(step, assignment))
      settings.push_back(step);
    else
      commands.push_back(step);
  }
  // Host front end: preprocess, cudafe++. Device front end: preprocess,
  // cicc, ptxas, fatbinary, and the rm of the fatbinary nvcc embeds from
  // its .c form. Then the rest (host compile, device link, link).
  const std::vector<std::string> host = {"gcc", "cudafe++"};
  const std::vector<std::string> device = {"gcc", "cicc", "ptxas", "fatbinary", "rm"};
  if (commands.size() <= host.size() + device.size())
    return std::nullopt;
  for (size_t i = 0; i < host.size(); ++i)
    if (toolOf(commands[i]) != host[i])
      return std::nullopt;
  for (size_t i = 0; i < device.size(); ++i)
    if (toolOf(commands[host.size() + i]) != device[i])
      return std::nullopt;
  // The next step compiles cudafe++'s output, which includes the
  // fatbinary: it needs both.
  if (toolOf(commands[host.size() + device.size()]) != "gcc")
    return std::nullopt;

  std::string script = "set -o pipefail\n";
  for (const std::string &setting : settings) {
    size_t equals = setting.find('=');
    // nvcc's values are shell words already (quoted where they hold
    // spaces); an empty one stays empty.
    script += "export " + setting.substr(0, equals) + "=" +
              setting.substr(equals + 1) + "\n";
  }
  auto chain = [&](size_t from, size_t count) {
    std::string text;
    for (size_t i = from; i < from + count; ++i)
      text += (i > from ? " && " : "") + commands[i];
    return text;
  };
  script += "( " + chain(0, host.size()) + " ) > " + quoted(hostLog) + " 2>&1 &\n";
  script += "host=$!\n";
  script += "( " + chain(host.size(), device.size()) + " ) > " + quoted(deviceLog) +
            " 2>&1 &\n";
  script += "device=$!\n";
  script += "wait $host; hostStatus=$?\n";
  script += "wait $device; deviceStatus=$?\n";
  script += "cat " + quoted(hostLog) + "\n";
  script += "[ $hostStatus -eq 0 ] || exit $hostStatus\n";
  script += "cat " + quoted(deviceLog) + "\n";
  script += "[ $deviceStatus -eq 0 ] || exit $deviceStatus\n";
  for (size_t i = host.size() + device.size(); i < commands.size(); ++i)
    script += commands[i] + " || exit $?\n";
  return script;
}

} // namespace dice
