//===- CommandLine.cpp - CLI11 set up like an LLVM tool -------------------===//

#include "dice/Support/CommandLine.h"

#include <algorithm>
#include <cctype>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>

namespace dice {

namespace {

constexpr size_t kColumn = 32;     // where option descriptions start
constexpr size_t kLineWidth = 80;
constexpr char kNoBreakSpace = '\x01'; // a space wrap() keeps on its line

/// `text` broken into lines that fit in `width` columns, each after the
/// first indented to `indent`.
std::string wrap(const std::string &text, size_t width, size_t indent) {
  std::string out;
  std::istringstream paragraphs(text);
  bool firstLine = true;
  for (std::string paragraph; std::getline(paragraphs, paragraph);) {
    std::istringstream words(paragraph);
    size_t used = 0;
    auto newLine = [&] {
      if (!firstLine)
        out += "\n" + std::string(indent, ' ');
      firstLine = false;
      used = 0;
    };
    newLine();
    for (std::string word; words >> word;) {
      if (used && used + 1 + word.size() > width)
        newLine();
      if (used) {
        out += ' ';
        ++used;
      }
      out += word;
      used += word.size();
    }
  }
  return out;
}

/// Help in the layout of `llvm::cl`'s:
///
///   OVERVIEW: <description>
///
///   USAGE: <tool> <usage>
///
///   OPTIONS:
///     --name=<value>                - description (default: 1)
class LLVMStyleFormatter : public CLI::Formatter {
public:
  LLVMStyleFormatter() {
    label("Positionals", "ARGUMENTS");
  }

  void setUsage(const CLI::App *app, std::string usage) {
    usages[app] = std::move(usage);
  }

  std::string make_description(const CLI::App *app) const override {
    std::string description = app->get_description();
    const size_t indent = std::string("OVERVIEW: ").size();
    return description.empty()
               ? ""
               : "OVERVIEW: " +
                     wrap(description, kLineWidth - indent, indent) + "\n\n";
  }

  std::string make_usage(const CLI::App *app, std::string name) const override {
    auto it = usages.find(app);
    return "USAGE: " + name + " " +
           (it == usages.end() ? std::string("[options]") : it->second) + "\n";
  }

  std::string make_group(std::string group, bool isPositional,
                         std::vector<const CLI::Option *> options) const override {
    std::transform(group.begin(), group.end(), group.begin(),
                   [](unsigned char c) { return std::toupper(c); });
    return CLI::Formatter::make_group(group, isPositional, std::move(options));
  }

  std::string make_help(const CLI::App *app, std::string name,
                        CLI::AppFormatMode mode) const override {
    // One blank line between sections: CLI11 puts two between groups.
    std::string help = CLI::Formatter::make_help(app, std::move(name), mode);
    for (size_t at; (at = help.find("\n\n\n")) != std::string::npos;)
      help.erase(at, 1);
    return help;
  }

  std::string make_subcommand(const CLI::App *sub) const override {
    return line(sub->get_name(), sub->get_description());
  }

  std::string make_option(const CLI::Option *option,
                          bool isPositional) const override {
    return line(make_option_name(option, isPositional) +
                    make_option_opts(option),
                make_option_desc(option));
  }

  std::string make_option_name(const CLI::Option *option,
                               bool isPositional) const override {
    if (isPositional)
      return "<" + option->get_name(true, false) + ">";
    // The long name, as llvm::cl shows it; -h too for --help.
    std::vector<std::string> names;
    for (const std::string &s : option->get_snames())
      names.push_back("-" + s);
    for (const std::string &l : option->get_lnames())
      names.push_back("--" + l);
    std::string shown;
    for (const std::string &n : names)
      shown += (shown.empty() ? "" : ", ") + n;
    return shown;
  }

  std::string make_option_opts(const CLI::Option *option) const override {
    if (option->get_positional() || option->get_expected_max() == 0)
      return "";
    std::string type = option->get_type_name();
    std::transform(type.begin(), type.end(), type.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    return "=<" + type + ">";
  }

  std::string make_option_desc(const CLI::Option *option) const override {
    std::string description = option->get_description();
    if (option->get_required())
      description += " (required)";
    else if (!option->get_default_str().empty())
      description += std::string(" (default:") + kNoBreakSpace +
                     option->get_default_str() + ")";
    return description;
  }

private:
  /// One entry of a list: its name, then " - " and its wrapped description
  /// at kColumn (on the next line when the name is longer).
  static std::string line(const std::string &name, const std::string &what) {
    std::string out = "  " + name;
    if (what.empty())
      return out + "\n";
    if (out.size() + 1 >= kColumn)
      out += "\n" + std::string(kColumn, ' ');
    else
      out += std::string(kColumn - out.size(), ' ');
    std::string wrapped = wrap(what, kLineWidth - kColumn - 2, kColumn + 2);
    std::replace(wrapped.begin(), wrapped.end(), kNoBreakSpace, ' ');
    return out + "- " + wrapped + "\n";
  }

  std::map<const CLI::App *, std::string> usages;
};

LLVMStyleFormatter &formatterOf(const CLI::App &app) {
  return static_cast<LLVMStyleFormatter &>(*app.get_formatter());
}

size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

/// The error for an argument no option or positional took, with the
/// nearest option name when one is close ("did you mean '--decode'?").
std::string unknownArgument(const CLI::App &app, const std::string &arg) {
  if (arg.empty() || arg[0] != '-')
    return "unexpected argument '" + arg + "'";
  std::string name = arg.substr(0, arg.find('='));
  std::string best;
  size_t bestDistance = 3; // suggest only near misses
  std::vector<const CLI::App *> apps = {&app};
  for (const CLI::App *sub : app.get_subcommands()) // the ones given
    apps.push_back(sub);
  for (const CLI::App *a : apps)
    for (const CLI::Option *option : a->get_options())
      for (const std::string &l : option->get_lnames())
        if (size_t d = editDistance(name, "--" + l); d < bestDistance) {
          bestDistance = d;
          best = "--" + l;
        }
  std::string message = "unknown argument '" + arg + "'";
  return best.empty() ? message : message + ", did you mean '" + best + "'?";
}

/// A CLI11 message in LLVM's diagnostic style: lower case, no trailing
/// period, and the few CLI11 phrasings that read badly rewritten.
std::string llvmStyle(const CLI::App &app, const CLI::ParseError &error) {
  std::string message = error.what();
  std::smatch m;
  if (std::regex_match(message, m, std::regex(R"((\S+): \d+ required \S+ missing)")))
    return m[1].str() + ": expected a value";
  if (std::regex_match(message, m, std::regex(R"(Could not convert: (\S+) = (.*))")))
    return m[1].str() + ": invalid value '" + m[2].str() + "'";
  if (std::regex_match(message, m, std::regex(R"(([^-\s]\S*) is required)")))
    return "missing <" + m[1].str() + ">";
  if (message == "A subcommand is required") {
    std::string names;
    for (const CLI::App *sub : app.get_subcommands({}))
      names += (names.empty() ? "" : ", ") + sub->get_name();
    return "expected a command (" + names + ")";
  }
  if (message.size() > 1 && std::isupper(static_cast<unsigned char>(message[0])) &&
      std::islower(static_cast<unsigned char>(message[1])))
    message[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(message[0])));
  while (!message.empty() && message.back() == '.')
    message.pop_back();
  return message;
}

} // namespace

CommandLine::CommandLine(std::string tool, std::string overview,
                         std::string usage, int usageExitCode)
    : CLI::App(std::move(overview), std::move(tool)),
      usageExitCode(usageExitCode) {
  auto formatter = std::make_shared<LLVMStyleFormatter>();
  formatter->setUsage(this, std::move(usage));
  this->formatter(formatter);
  set_help_flag("-h,--help", "display available options");
  // Unknown arguments are collected, not thrown, so that parse() can name
  // the first of them before any other complaint.
  allow_extras();
}

CLI::App *CommandLine::addCommand(std::string name, std::string overview,
                                  std::string usage) {
  CLI::App *sub = add_subcommand(std::move(name), std::move(overview));
  sub->group("COMMANDS");
  formatterOf(*this).setUsage(sub, std::move(usage));
  return sub;
}

std::optional<int> CommandLine::parse(int argc, const char *const *argv) {
  auto firstUnknown = [&]() -> std::optional<std::string> {
    std::vector<std::string> left = remaining(/*recurse=*/true);
    if (left.empty())
      return std::nullopt;
    return left.front();
  };
  try {
    CLI::App::parse(argc, argv);
  } catch (const CLI::CallForHelp &) {
    std::cout << help();
    return 0;
  } catch (const CLI::ParseError &error) {
    if (std::optional<std::string> arg = firstUnknown())
      return usageError(unknownArgument(*this, *arg));
    return usageError(llvmStyle(*this, error));
  }
  if (std::optional<std::string> arg = firstUnknown())
    return usageError(unknownArgument(*this, *arg));
  return std::nullopt;
}

int CommandLine::usageError(const std::string &message) const {
  std::cerr << get_name() << ": error: " << message << "\n";
  return usageExitCode;
}

CLI::Validator oneOf(std::vector<std::string> names) {
  return CLI::Validator(
      [names](std::string &input) {
        if (std::find(names.begin(), names.end(), input) != names.end())
          return std::string();
        std::string list;
        for (size_t i = 0; i < names.size(); ++i)
          list += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") +
                  names[i];
        return "expected " + list + ", got '" + input + "'";
      },
      "");
}

const CLI::Validator positiveNumber(
    [](std::string &input) {
      char *end = nullptr;
      double value = std::strtod(input.c_str(), &end);
      if (input.empty() || *end || !(value > 0))
        return "expected a positive number, got '" + input + "'";
      return std::string();
    },
    "");

} // namespace dice
