//===- Schema.cpp - checking a configuration's values ---------------------===//

#include "dice/Config/Schema.h"
#include "dice/Config/TomlDocument.h"

#include <sstream>

namespace dice::schema {
namespace {

std::string_view kindName(Kind kind) {
  switch (kind) {
  case Kind::Integer:
    return "an integer";
  case Kind::Float:
    return "a number";
  case Kind::String:
  case Kind::Choice:
    return "a string";
  case Kind::Bool:
    return "true or false";
  case Kind::Strings:
    return "an array of strings";
  case Kind::Integers:
    return "an array of integers";
  }
  return "";
}

std::string_view tomlTypeName(const toml::node &node) {
  switch (node.type()) {
  case toml::node_type::table:
    return "a table";
  case toml::node_type::array:
    return "an array";
  case toml::node_type::string:
    return "a string";
  case toml::node_type::integer:
    return "an integer";
  case toml::node_type::floating_point:
    return "a float";
  case toml::node_type::boolean:
    return "a boolean";
  default:
    return "a date or time";
  }
}

std::string formatNumber(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

/// Empty when `v` is in the rule's range; otherwise "must be in [a, b]".
std::string outOfRange(const Rule &rule, double v) {
  bool low = rule.minExclusive ? !(v > rule.min) : !(v >= rule.min);
  if (!low && v <= rule.max)
    return "";
  std::string lo = rule.minExclusive ? "(" : "[";
  std::string hi =
      rule.max >= kUnbounded ? "inf)" : formatNumber(rule.max) + "]";
  return "must be in " + lo + formatNumber(rule.min) + ", " + hi + ", got " +
         formatNumber(v);
}

/// Empty when `value` is one of the rule's choices; otherwise why not.
std::string notAChoice(const Rule &rule, std::string_view value) {
  std::string options;
  for (std::string_view c : rule.choices) {
    if (c == value)
      return "";
    options += (options.empty() ? "\"" : ", \"") + std::string(c) + "\"";
  }
  for (std::string_view c : rule.notYet)
    if (c == value)
      return "\"" + std::string(value) + "\" is not implemented yet; use " +
             options;
  return "must be one of " + options + ", got \"" + std::string(value) + "\"";
}

} // namespace

Error errorAt(const std::string &file, const toml::source_region &where,
              std::string key, std::string message) {
  return Error(file, static_cast<unsigned>(where.begin.line),
               static_cast<unsigned>(where.begin.column), std::move(key),
               std::move(message));
}

Status checkValue(const Rule &rule, const toml::node &node,
                  const std::string &file, const std::string &key) {
  auto fail = [&](const toml::node &at, std::string message) -> Status {
    return errorAt(file, at.source(), key, std::move(message));
  };
  auto wrongType = [&] {
    return fail(node, "must be " + std::string(kindName(rule.kind)) + ", got " +
                          std::string(tomlTypeName(node)));
  };
  switch (rule.kind) {
  case Kind::String:
    return node.is_string() ? Status() : wrongType();
  case Kind::Bool:
    return node.is_boolean() ? Status() : wrongType();
  case Kind::Choice: {
    if (!node.is_string())
      return wrongType();
    std::string why = notAChoice(rule, node.as_string()->get());
    return why.empty() ? Status() : fail(node, why);
  }
  case Kind::Integer: {
    if (!node.is_integer())
      return wrongType();
    std::string why = outOfRange(rule, double(node.as_integer()->get()));
    return why.empty() ? Status() : fail(node, why);
  }
  case Kind::Float: {
    double v;
    if (node.is_floating_point())
      v = node.as_floating_point()->get();
    else if (node.is_integer())
      v = double(node.as_integer()->get());
    else
      return wrongType();
    std::string why = outOfRange(rule, v);
    return why.empty() ? Status() : fail(node, why);
  }
  case Kind::Strings:
  case Kind::Integers: {
    const toml::array *array = node.as_array();
    if (!array)
      return wrongType();
    int64_t previous = 0;
    bool first = true;
    for (const toml::node &e : *array) {
      if (rule.kind == Kind::Strings) {
        if (!e.is_string())
          return fail(e, "must hold strings only, got " +
                             std::string(tomlTypeName(e)));
        if (!rule.choices.empty())
          if (std::string why = notAChoice(rule, e.as_string()->get());
              !why.empty())
            return fail(e, why);
        continue;
      }
      // An integer list is a schedule: each entry in range, increasing.
      if (!e.is_integer())
        return fail(e, "must hold integers only, got " +
                           std::string(tomlTypeName(e)));
      int64_t v = e.as_integer()->get();
      if (std::string why = outOfRange(rule, double(v)); !why.empty())
        return fail(e, why);
      if (!first && v <= previous)
        return fail(e, "must be increasing, got " + std::to_string(v) +
                           " after " + std::to_string(previous));
      previous = v;
      first = false;
    }
    return {};
  }
  }
  return wrongType();
}

std::string knownSections(const std::vector<std::string_view> &sections) {
  std::string list;
  for (std::string_view s : sections)
    list += (list.empty() ? "" : ", ") + std::string(s);
  return "unknown section (known: " + list + ")";
}

std::string knownKeys(std::string_view section,
                      const std::vector<std::string_view> &keys) {
  std::string list;
  for (std::string_view k : keys)
    list += (list.empty() ? "" : ", ") + std::string(k);
  return "unknown key (known in [" + std::string(section) + "]: " + list + ")";
}

Result<toml::table> parseOverride(std::string_view key, std::string_view value,
                                  const std::string &sourceName) {
  size_t dot = key.find('.');
  if (dot == std::string_view::npos)
    return Error(sourceName, 0, 0, std::string(key),
                 "expected a dotted key such as section.key");
  std::string text = "[" + std::string(key.substr(0, dot)) + "]\n" +
                     std::string(key.substr(dot + 1)) + " = " +
                     std::string(value) + "\n";
  Result<toml::table> parsed = parseTomlDocument(text, sourceName);
  if (!parsed)
    return Error(sourceName, 0, 0, std::string(key),
                 "cannot parse value '" + std::string(value) +
                     "': " + parsed.error().message);
  return parsed;
}

} // namespace dice::schema
