//===- Config.cpp - dice.toml configuration -------------------------------===//

#include "dice/Config/Config.h"
#include "dice/Config/TomlDocument.h"
#include "dice/Support/File.h"

#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

namespace dice {
namespace {

/// What a key accepts.
enum class Kind { Integer, Float, String, Choice };

/// A value already checked against its field's kind and range.
using Value = std::variant<int64_t, double, std::string>;

/// One key of the schema: its section, type, range and where it goes.
struct Field {
  std::string_view section;
  std::string_view key;
  Kind kind;
  double min = 0, max = 0; ///< inclusive range for numbers
  bool minExclusive = false;
  std::vector<std::string_view> choices; ///< for Kind::Choice
  std::function<void(Config &, const Value &)> set;
  /// Choices the design names that this version cannot do yet: an error
  /// that says so, rather than a value that would be parsed and ignored.
  std::vector<std::string_view> notYet = {};
};

template <typename T> auto integer(T SamplingConfig::*member) {
  return [member](Config &c, const Value &v) {
    c.sampling.*member = std::get<int64_t>(v);
  };
}
template <typename T> auto integer(T VerifierConfig::*member) {
  return [member](Config &c, const Value &v) {
    c.verifier.*member = std::get<int64_t>(v);
  };
}
auto real(double SamplingConfig::*member) {
  return [member](Config &c, const Value &v) {
    c.sampling.*member = std::get<double>(v);
  };
}
auto real(double VerifierConfig::*member) {
  return [member](Config &c, const Value &v) {
    c.verifier.*member = std::get<double>(v);
  };
}
/// A decoding key the checkpoint's generation_config.json may also give:
/// setting it records that the user chose it (applyGenerationDefaults in
/// ModelConfig.h then leaves it alone).
using UserSetKeys = decltype(SamplingConfig::userSet);
template <typename T>
auto decoding(T SamplingConfig::*member, bool UserSetKeys::*chosen) {
  return [member, chosen](Config &c, const Value &v) {
    c.sampling.*member = std::get<T>(v);
    c.sampling.userSet.*chosen = true;
  };
}
auto text(std::string Config::*member) {
  return [member](Config &c, const Value &v) {
    c.*member = std::get<std::string>(v);
  };
}

constexpr double kHuge = 1e18;

const std::vector<Field> &schema() {
  static const std::vector<Field> fields = {
      {"model", "path", Kind::String, 0, 0, false, {}, text(&Config::modelPath)},
      {"model", "base", Kind::String, 0, 0, false, {}, text(&Config::modelBase)},
      {"model", "adapter", Kind::String, 0, 0, false, {}, text(&Config::modelAdapter)},
      {"model", "device", Kind::Choice, 0, 0, false, {"auto", "cuda", "cpu"},
       text(&Config::modelDevice)},
      {"model", "dtype", Kind::Choice, 0, 0, false,
       {"auto", "bfloat16", "float16", "float32"}, text(&Config::modelDType)},

      {"sampling", "block_length", Kind::Integer, 1, 4096, false, {},
       integer(&SamplingConfig::blockLength)},
      {"sampling", "denoising_steps", Kind::Integer, 1, 4096, false, {},
       integer(&SamplingConfig::denoisingSteps)},
      {"sampling", "remasking", Kind::Choice, 0, 0, false,
       {"static", "dynamic", "sequential"},
       [](Config &c, const Value &v) {
         const auto &s = std::get<std::string>(v);
         c.sampling.remasking = s == "static"    ? Remasking::Static
                                : s == "dynamic" ? Remasking::Dynamic
                                                 : Remasking::Sequential;
       }},
      {"sampling", "threshold", Kind::Float, 0, 1, true, {},
       real(&SamplingConfig::threshold)},
      {"sampling", "temperature", Kind::Float, 0, 100, false, {},
       decoding(&SamplingConfig::temperature, &UserSetKeys::temperature)},
      {"sampling", "top_k", Kind::Integer, 0, 1e9, false, {},
       decoding(&SamplingConfig::topK, &UserSetKeys::topK)},
      {"sampling", "top_p", Kind::Float, 0, 1, true, {},
       decoding(&SamplingConfig::topP, &UserSetKeys::topP)},
      {"sampling", "max_tokens", Kind::Integer, 1, 1 << 20, false, {},
       decoding(&SamplingConfig::maxTokens, &UserSetKeys::maxTokens)},
      {"sampling", "candidates", Kind::Integer, 1, 1024, false, {},
       integer(&SamplingConfig::candidates)},

      {"verifier", "trials", Kind::Integer, 1, 1000, false, {},
       integer(&VerifierConfig::trials)},
      {"verifier", "atol", Kind::Float, 0, 1, false, {},
       real(&VerifierConfig::atol)},
      {"verifier", "rtol", Kind::Float, 0, 1, false, {},
       real(&VerifierConfig::rtol)},
      {"verifier", "half_atol", Kind::Float, 0, 1, false, {},
       real(&VerifierConfig::halfAtol)},
      {"verifier", "half_rtol", Kind::Float, 0, 1, false, {},
       real(&VerifierConfig::halfRtol)},
      {"verifier", "comparison", Kind::Choice, 0, 0, false,
       {"scaled", "kernelbench"},
       [](Config &c, const Value &v) {
         c.verifier.comparison = std::get<std::string>(v) == "kernelbench"
                                     ? Comparison::KernelBench
                                     : Comparison::Scaled;
       }},
      {"verifier", "kernelbench_tolerance", Kind::Float, 0, 1, true, {},
       real(&VerifierConfig::kernelbenchTolerance)},
      {"verifier", "timing_runs", Kind::Integer, 1, 100000, false, {},
       integer(&VerifierConfig::timingRuns)},
      {"verifier", "timing_precision", Kind::Float, 0, 1, false, {},
       real(&VerifierConfig::timingPrecision)},
      {"verifier", "min_speedup", Kind::Float, 0, kHuge, true, {},
       real(&VerifierConfig::minSpeedup)},
      {"verifier", "baseline", Kind::Choice, 0, 0, false,
       {"eager", "measured_eager", "inductor", "fastest"},
       [](Config &c, const Value &v) {
         const std::string &name = std::get<std::string>(v);
         c.verifier.baseline = name == "inductor" ? Baseline::Inductor
                               : name == "measured_eager"
                                   ? Baseline::MeasuredEager
                               : name == "fastest" ? Baseline::Fastest
                                                   : Baseline::Eager;
       },
       {"default-lowering"}},
      {"verifier", "baseline_times", Kind::String, 0, 0, false, {},
       [](Config &c, const Value &v) {
         c.verifier.baselineTimes = std::get<std::string>(v);
       }},
      {"verifier", "timeout_s", Kind::Float, 0, 86400, true, {},
       real(&VerifierConfig::timeoutSeconds)},
      {"verifier", "workers", Kind::Integer, 0, 4096, false, {},
       integer(&VerifierConfig::workers)},
      {"verifier", "build_group", Kind::Integer, 1, 64, false, {},
       integer(&VerifierConfig::buildGroup)},

      {"prompt", "infill", Kind::String, 0, 0, false, {},
       text(&Config::promptInfill)},
      {"prompt", "end_to_end", Kind::String, 0, 0, false, {},
       text(&Config::promptEndToEnd)},

      {"database", "path", Kind::String, 0, 0, false, {},
       text(&Config::databasePath)},
      {"artifacts", "dir", Kind::String, 0, 0, false, {},
       text(&Config::artifactDir)},
  };
  return fields;
}

const Field *findField(std::string_view section, std::string_view key) {
  for (const Field &f : schema())
    if (f.section == section && f.key == key)
      return &f;
  return nullptr;
}

bool isSection(std::string_view section) {
  for (const Field &f : schema())
    if (f.section == section)
      return true;
  return false;
}

std::string_view kindName(Kind kind) {
  switch (kind) {
  case Kind::Integer:
    return "an integer";
  case Kind::Float:
    return "a number";
  case Kind::String:
  case Kind::Choice:
    return "a string";
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

class Loader {
public:
  explicit Loader(std::string file) : file(std::move(file)) {}

  /// Applies every key of `root` onto `config`; the first problem wins.
  Status apply(const toml::table &root, Config &config) {
    // Where the steps/block relation was last set, to point at it if broken.
    toml::source_region stepsWhere{};
    // Where each [model] key naming weights was set.
    std::map<std::string, toml::source_region> modelWhere;
    for (auto &&[sectionKey, sectionNode] : root) {
      std::string section(sectionKey.str());
      if (!isSection(section))
        return error(sectionKey.source(), section,
                     "unknown section (known: model, sampling, verifier, "
                     "prompt, database, artifacts)");
      const toml::table *table = sectionNode.as_table();
      if (!table)
        return error(sectionNode.source(), section,
                     "must be a table, e.g. [" + section + "]");
      for (auto &&[key, node] : *table) {
        std::string dotted = section + "." + std::string(key.str());
        const Field *field = findField(section, key.str());
        if (!field)
          return error(key.source(), dotted, "unknown key" + known(section));
        auto value = check(*field, node, dotted);
        if (!value)
          return lastError;
        field->set(config, *value);
        if (section == "model")
          modelWhere[dotted] = node.source();
        if (dotted == "sampling.denoising_steps" ||
            (dotted == "sampling.block_length" && !stepsWhere.begin))
          stepsWhere = node.source();
      }
    }
    if (config.sampling.denoisingSteps > config.sampling.blockLength)
      return error(stepsWhere, "sampling.denoising_steps",
                   "must not exceed sampling.block_length (" +
                       std::to_string(config.sampling.blockLength) +
                       "): each step unmasks at least one token");
    return checkModelKeys(config, modelWhere);
  }

private:
  std::string file;
  Error lastError;

  /// `path` names a whole model; `base` and `adapter` name a base and the
  /// adapter merged into it, always together.
  Status checkModelKeys(const Config &config,
                        const std::map<std::string, toml::source_region> &where) {
    if (!config.modelPath.empty() && where.count("model.base"))
      return error(where.at("model.base"), "model.base",
                   "give either model.path (a whole model) or model.base and "
                   "model.adapter (an adapter over its base), not both");
    if (where.count("model.adapter") && config.modelBase.empty())
      return error(where.at("model.adapter"), "model.adapter",
                   "needs model.base, the checkpoint the adapter was trained on");
    if (where.count("model.base") && config.modelAdapter.empty())
      return error(where.at("model.base"), "model.base",
                   "needs model.adapter (a model without one is model.path)");
    return {};
  }

  Error error(const toml::source_region &where, std::string key,
              std::string message) {
    return Error(file, static_cast<unsigned>(where.begin.line),
                 static_cast<unsigned>(where.begin.column), std::move(key),
                 std::move(message));
  }

  std::string known(const std::string &section) {
    std::string list;
    for (const Field &f : schema())
      if (f.section == section)
        list += (list.empty() ? "" : ", ") + std::string(f.key);
    return " (known in [" + section + "]: " + list + ")";
  }

  std::optional<Value> fail(const toml::node &node, const std::string &key,
                            std::string message) {
    lastError = error(node.source(), key, std::move(message));
    return std::nullopt;
  }

  std::optional<Value> check(const Field &field, const toml::node &node,
                             const std::string &key) {
    auto wrongType = [&] {
      return fail(node, key,
                  "must be " + std::string(kindName(field.kind)) + ", got " +
                      std::string(tomlTypeName(node)));
    };
    switch (field.kind) {
    case Kind::String:
      if (!node.is_string())
        return wrongType();
      return Value(std::string(node.as_string()->get()));
    case Kind::Choice: {
      if (!node.is_string())
        return wrongType();
      std::string s(node.as_string()->get());
      std::string options;
      for (std::string_view c : field.choices) {
        if (c == s)
          return Value(s);
        options += (options.empty() ? "\"" : ", \"") + std::string(c) + "\"";
      }
      for (std::string_view c : field.notYet)
        if (c == s)
          return fail(node, key,
                      "\"" + s + "\" is not implemented yet; use " + options);
      return fail(node, key, "must be one of " + options + ", got \"" + s + "\"");
    }
    case Kind::Integer: {
      if (!node.is_integer())
        return wrongType();
      int64_t v = node.as_integer()->get();
      if (auto problem = outOfRange(field, static_cast<double>(v)))
        return fail(node, key, *problem + ", got " + std::to_string(v));
      return Value(v);
    }
    case Kind::Float: {
      double v;
      if (node.is_floating_point())
        v = node.as_floating_point()->get();
      else if (node.is_integer())
        v = static_cast<double>(node.as_integer()->get());
      else
        return wrongType();
      if (auto problem = outOfRange(field, v))
        return fail(node, key, *problem + ", got " + formatNumber(v));
      return Value(v);
    }
    }
    return wrongType();
  }

  static std::optional<std::string> outOfRange(const Field &f, double v) {
    bool low = f.minExclusive ? !(v > f.min) : !(v >= f.min);
    if (!low && v <= f.max)
      return std::nullopt;
    std::string lo = f.minExclusive ? "(" : "[";
    std::string hi = f.max >= kHuge ? "inf)" : formatNumber(f.max) + "]";
    return "must be in " + lo + formatNumber(f.min) + ", " + hi;
  }
};

} // namespace

Result<Config> parseConfig(std::string_view text, std::string_view sourceName) {
  std::string file(sourceName);
  Result<toml::table> parsed = parseTomlDocument(text, file);
  if (!parsed)
    return parsed.error();
  Config config;
  if (Status applied = Loader(file).apply(*parsed, config); !applied)
    return applied.error();
  return config;
}

Result<Config> loadConfigFile(const std::string &path) {
  Result<std::string> contents = readFile(path);
  if (!contents)
    return Error(path, "cannot open configuration file");
  return parseConfig(*contents, path);
}

Status applyConfigOverride(Config &config, std::string_view key,
                           std::string_view value) {
  std::string dotted(key);
  size_t dot = dotted.find('.');
  if (dot == std::string::npos)
    return Error("<override>", 0, 0, dotted,
                 "expected a dotted key such as sampling.top_k");
  std::string text = "[" + dotted.substr(0, dot) + "]\n" +
                     dotted.substr(dot + 1) + " = " + std::string(value) + "\n";
  Result<toml::table> parsed = parseTomlDocument(text, "<override>");
  if (!parsed)
    return Error("<override>", 0, 0, dotted,
                 "cannot parse value '" + std::string(value) +
                     "': " + parsed.error().message);
  Config updated = config;
  if (Status applied = Loader("<override>").apply(*parsed, updated);
      !applied) {
    Error error = applied.error();
    error.line = error.column = 0; // lines of the synthetic text mean nothing
    return error;
  }
  config = std::move(updated);
  return {};
}

std::string_view toString(Remasking remasking) {
  switch (remasking) {
  case Remasking::Static:
    return "static";
  case Remasking::Dynamic:
    return "dynamic";
  case Remasking::Sequential:
    return "sequential";
  }
  return "";
}

std::string_view toString(Baseline baseline) {
  switch (baseline) {
  case Baseline::Eager:
    return "eager";
  case Baseline::MeasuredEager:
    return "measured_eager";
  case Baseline::Inductor:
    return "inductor";
  case Baseline::Fastest:
    return "fastest";
  }
  return "";
}

std::string_view toString(Comparison comparison) {
  return comparison == Comparison::KernelBench ? "kernelbench" : "scaled";
}

} // namespace dice
