//===- Schema.h - the keys of a TOML configuration, checked -----*- C++ -*-===//
//
// dice.toml (Config.cpp) and dice-train's configuration (TrainConfig.cpp)
// are each a table of Fields: a section and key, the Rule its value obeys,
// and where the value goes. applySchema reads a parsed document through such
// a table: an unknown section or key, a value of the wrong type, out of its
// range or outside its choices is an error at the value's file, line and
// column, worded the same for both tools. Each configuration keeps only its
// table and the checks that relate keys to each other.
//
// Only libraries that read TOML include this (it pulls in toml++).
//
//===----------------------------------------------------------------------===//

#ifndef DICE_CONFIG_SCHEMA_H
#define DICE_CONFIG_SCHEMA_H

#include "dice/Support/Result.h"

#include <toml++/toml.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace dice::schema {

enum class Kind { Integer, Float, String, Choice, Bool, Strings, Integers };

/// An upper bound that means none: ranges print it as "inf)".
inline constexpr double kUnbounded = 1e18;

/// What a key's value must be.
struct Rule {
  Kind kind;
  double min = 0, max = 0; ///< inclusive range of a number or an integer
  bool minExclusive = false;
  /// The strings a Choice (or each string of Strings, when not empty) may be.
  std::vector<std::string_view> choices = {};
  /// Choices a design names that this version cannot do yet: an error that
  /// says so, rather than a value that would be read and ignored.
  std::vector<std::string_view> notYet = {};
};

/// One key of a configuration `C`: where it is, its rule, and how a checked
/// value is stored.
template <typename C> struct Field {
  std::string_view section, key;
  Rule rule;
  std::function<void(C &, const toml::node &)> set;
};

/// Where each dotted key of a document was set, for the checks that relate
/// keys (their errors point at one of them).
using KeyRegions = std::map<std::string, toml::source_region>;

/// An error at `where` in `file`, about `key`.
Error errorAt(const std::string &file, const toml::source_region &where,
              std::string key, std::string message);

/// Whether `node` obeys `rule`; the error names `key` at the node's place.
Status checkValue(const Rule &rule, const toml::node &node,
                  const std::string &file, const std::string &key);

/// A checked value as the C++ type of the member it goes to.
template <typename T> T valueOf(const toml::node &n) {
  if constexpr (std::is_same_v<T, std::string>)
    return std::string(n.as_string()->get());
  else if constexpr (std::is_same_v<T, bool>)
    return n.as_boolean()->get();
  else if constexpr (std::is_floating_point_v<T>)
    return n.is_integer() ? T(n.as_integer()->get())
                          : T(n.as_floating_point()->get());
  else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    T values;
    for (const toml::node &e : *n.as_array())
      values.push_back(std::string(e.as_string()->get()));
    return values;
  } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
    T values;
    for (const toml::node &e : *n.as_array())
      values.push_back(e.as_integer()->get());
    return values;
  } else
    return T(n.as_integer()->get());
}

/// A setter storing the value into `member` of the configuration.
template <typename C, typename T> auto into(T C::*member) {
  return [member](C &c, const toml::node &n) { c.*member = valueOf<T>(n); };
}

/// A setter storing the value into `member` of the configuration's `part`.
template <typename C, typename P, typename T>
auto into(P C::*part, T P::*member) {
  return [part, member](C &c, const toml::node &n) {
    c.*part.*member = valueOf<T>(n);
  };
}

/// `fields` of a configuration `P` as fields of `C`, which holds one at
/// `part` (dice-train's configuration takes dice.toml's [sampling] keys).
template <typename C, typename P>
void appendPart(std::vector<Field<C>> &to, const std::vector<Field<P>> &fields,
                P C::*part, std::string_view section) {
  for (const Field<P> &f : fields)
    if (f.section == section)
      to.push_back({f.section, f.key, f.rule,
                    [part, set = f.set](C &c, const toml::node &n) {
                      set(c.*part, n);
                    }});
}

/// "unknown section (known: ...)" or "unknown key (known in [s]: ...)".
std::string knownSections(const std::vector<std::string_view> &sections);
std::string knownKeys(std::string_view section,
                      const std::vector<std::string_view> &keys);

/// Applies every key of `root` onto `config` through `fields`; the first
/// problem is the error. `where`, when given, records each key's place.
template <typename C>
Status applySchema(const std::vector<Field<C>> &fields, const toml::table &root,
                   C &config, const std::string &file,
                   KeyRegions *where = nullptr) {
  std::vector<std::string_view> sections;
  for (const Field<C> &f : fields)
    if (sections.empty() || sections.back() != f.section)
      sections.push_back(f.section);
  for (auto &&[sectionKey, sectionNode] : root) {
    std::string section(sectionKey.str());
    std::vector<std::string_view> keys;
    for (const Field<C> &f : fields)
      if (f.section == section)
        keys.push_back(f.key);
    if (keys.empty())
      return errorAt(file, sectionKey.source(), section,
                     knownSections(sections));
    const toml::table *table = sectionNode.as_table();
    if (!table)
      return errorAt(file, sectionNode.source(), section,
                     "must be a table, e.g. [" + section + "]");
    for (auto &&[key, node] : *table) {
      std::string dotted = section + "." + std::string(key.str());
      const Field<C> *field = nullptr;
      for (const Field<C> &f : fields)
        if (f.section == section && f.key == key.str())
          field = &f;
      if (!field)
        return errorAt(file, key.source(), dotted, knownKeys(section, keys));
      if (Status ok = checkValue(field->rule, node, file, dotted); !ok)
        return ok;
      field->set(config, node);
      if (where)
        (*where)[dotted] = node.source();
    }
  }
  return {};
}

/// `key=value` (one dotted key, its value in TOML) as a document of its
/// own, for the tools' overrides; `sourceName` names it in errors.
Result<toml::table> parseOverride(std::string_view key, std::string_view value,
                                  const std::string &sourceName);

} // namespace dice::schema

#endif // DICE_CONFIG_SCHEMA_H
