//===- CommandLine.h - CLI11 set up like an LLVM tool -----------*- C++ -*-===//
//
// The command line of the tools that do not link LLVM (the LibTorch half and
// the tools that need neither half): CLI11, with `--help` laid out like
// `llvm::cl`'s (OVERVIEW, USAGE, OPTIONS) and errors written as LLVM tools
// write them, `<tool>: error: <message>` on stderr. The LLVM-built tools
// (dice-opt, dice-plan) keep `llvm::cl`.
//
// CLI11 reports errors by throwing; CommandLine::parse catches them, so these
// tools see a return code, as they would from `llvm::cl`.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_SUPPORT_COMMANDLINE_H
#define DICE_SUPPORT_COMMANDLINE_H

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace dice {

/// A tool's command line: a CLI11 application whose help and errors read
/// like an LLVM tool's.
class CommandLine : public CLI::App {
public:
  /// `usage` follows the tool's name on the USAGE line ("[options] <file>");
  /// `usageExitCode` is what main returns after a usage error.
  CommandLine(std::string tool, std::string overview, std::string usage,
              int usageExitCode = 1);

  /// A subcommand (`dice-db import ...`) with its own USAGE line.
  CLI::App *addCommand(std::string name, std::string overview,
                       std::string usage);

  /// Parses argv. std::nullopt: carry on; otherwise main returns the value:
  /// 0 after printing --help, the usage exit code after printing an error.
  std::optional<int> parse(int argc, const char *const *argv);

  /// Prints `<tool>: error: <message>` and returns the usage exit code: for
  /// what the options cannot say themselves (which combinations are valid).
  int usageError(const std::string &message) const;

private:
  int usageExitCode;
};

/// A validator that accepts one of `names`; anything else is an error that
/// lists them ("expected cpu or cuda, got 'tpu'").
CLI::Validator oneOf(std::vector<std::string> names);

/// Like oneOf, and the value becomes the enumerator `names` maps it to; use
/// with `->transform(...)` on an option of the enum type.
template <typename Enum>
CLI::Validator oneOf(std::vector<std::pair<std::string, Enum>> choices) {
  static_assert(std::is_enum_v<Enum>);
  std::vector<std::string> names;
  for (const auto &choice : choices)
    names.push_back(choice.first);
  CLI::Validator check = oneOf(names);
  return CLI::Validator(
      [check, choices](std::string &input) {
        std::string error = check(input);
        if (!error.empty())
          return error;
        for (const auto &[name, value] : choices)
          if (name == input)
            input = std::to_string(
                static_cast<std::underlying_type_t<Enum>>(value));
        return std::string();
      },
      "");
}

/// A number greater than zero ("expected a positive number, got '0'").
extern const CLI::Validator positiveNumber;

} // namespace dice

#endif // DICE_SUPPORT_COMMANDLINE_H
