//===- TrainConfig.cpp - dice-train's configuration -----------------------===//

#include "dice/Train/TrainConfig.h"
#include "dice/Support/File.h"

#include "dice/Config/TomlDocument.h"

#include <filesystem>
#include <functional>
#include <sstream>

namespace dice {
namespace {

enum class Kind { Integer, Float, String, Choice, Bool, Strings, Integers };

/// One key: its section, kind, range or choices, and where it goes.
struct Field {
  std::string_view section, key;
  Kind kind;
  double min = 0, max = 0;
  std::vector<std::string_view> choices = {};
  std::function<void(TrainConfig &, const toml::node &)> set = {};
};

constexpr double kHuge = 1e18;

template <typename T> auto member(T TrainConfig::*m) {
  return [m](TrainConfig &c, const toml::node &n) {
    if constexpr (std::is_same_v<T, std::string>)
      c.*m = std::string(n.as_string()->get());
    else if constexpr (std::is_same_v<T, bool>)
      c.*m = n.as_boolean()->get();
    else if constexpr (std::is_same_v<T, double>)
      c.*m = n.is_integer() ? double(n.as_integer()->get())
                            : n.as_floating_point()->get();
    else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      (c.*m).clear();
      for (const toml::node &e : *n.as_array())
        (c.*m).push_back(std::string(e.as_string()->get()));
    } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
      (c.*m).clear();
      for (const toml::node &e : *n.as_array())
        (c.*m).push_back(e.as_integer()->get());
    } else
      c.*m = T(n.as_integer()->get());
  };
}

const std::vector<Field> &schema() {
  static const std::vector<Field> fields = {
      {"run", "stage", Kind::Choice, 0, 0,
       {"sft", "rl-infill", "rl-e2e", "eval-infill", "eval-e2e"},
       [](TrainConfig &c, const toml::node &n) {
         std::string_view s = n.as_string()->get();
         c.stage = s == "sft"           ? TrainStage::Sft
                   : s == "rl-infill"   ? TrainStage::RlInfill
                   : s == "rl-e2e"      ? TrainStage::RlEndToEnd
                   : s == "eval-infill" ? TrainStage::EvalInfill
                                        : TrainStage::EvalEndToEnd;
       }},
      {"run", "steps", Kind::Integer, 0, 1e12, {}, member(&TrainConfig::steps)},
      {"run", "seed", Kind::Integer, 0, 9.2e18, {}, member(&TrainConfig::seed)},
      {"run", "device", Kind::Choice, 0, 0, {"auto", "cpu", "cuda"},
       member(&TrainConfig::device)},
      {"run", "precision", Kind::Choice, 0, 0, {"fp32", "bf16"},
       member(&TrainConfig::precision)},

      {"model", "path", Kind::String, 0, 0, {}, member(&TrainConfig::modelPath)},
      {"model", "random_init", Kind::Bool, 0, 0, {},
       member(&TrainConfig::randomInit)},
      {"model", "gradient_checkpointing", Kind::Bool, 0, 0, {},
       member(&TrainConfig::gradientCheckpointing)},

      {"data", "sft", Kind::Strings, 0, 0, {}, member(&TrainConfig::sftFiles)},
      {"data", "tasks", Kind::Strings, 0, 0, {}, member(&TrainConfig::taskFiles)},
      {"data", "infill_template", Kind::String, 0, 0, {},
       member(&TrainConfig::infillTemplate)},
      {"data", "end_to_end_template", Kind::String, 0, 0, {},
       member(&TrainConfig::endToEndTemplate)},
      {"data", "max_length", Kind::Integer, 8, 1 << 20, {},
       member(&TrainConfig::maxLength)},
      {"data", "pack_length", Kind::Integer, 16, 1 << 22, {},
       member(&TrainConfig::packLength)},
      {"data", "end_to_end_too", Kind::Bool, 0, 0, {},
       member(&TrainConfig::endToEndToo)},
      {"data", "curriculum", Kind::Bool, 0, 0, {}, member(&TrainConfig::curriculum)},
      {"data", "curriculum_ramp", Kind::Float, 0, 1, {},
       member(&TrainConfig::curriculumRamp)},

      {"optim", "lr", Kind::Float, 0, 1, {}, member(&TrainConfig::lr)},
      {"optim", "weight_decay", Kind::Float, 0, 1, {},
       member(&TrainConfig::weightDecay)},
      {"optim", "beta1", Kind::Float, 0, 0.999999, {}, member(&TrainConfig::beta1)},
      {"optim", "beta2", Kind::Float, 0, 0.999999999, {}, member(&TrainConfig::beta2)},
      {"optim", "eps", Kind::Float, 1e-30, 1, {}, member(&TrainConfig::eps)},
      {"optim", "grad_clip", Kind::Float, 0, kHuge, {},
       member(&TrainConfig::gradClip)},
      {"optim", "warmup_steps", Kind::Integer, 0, 1e12, {},
       member(&TrainConfig::warmupSteps)},
      {"optim", "schedule", Kind::Choice, 0, 0, {"constant", "cosine"},
       member(&TrainConfig::schedule)},
      {"optim", "min_lr_ratio", Kind::Float, 0, 1, {},
       member(&TrainConfig::minLrRatio)},
      {"optim", "global_batch", Kind::Integer, 1, 1 << 20, {},
       member(&TrainConfig::globalBatch)},
      {"optim", "micro_batch", Kind::Integer, 1, 1 << 20, {},
       member(&TrainConfig::microBatch)},
      {"optim", "bucket_mb", Kind::Float, 0.001, 1 << 20, {},
       member(&TrainConfig::bucketMb)},
      {"optim", "shard_optimizer", Kind::Bool, 0, 0, {},
       member(&TrainConfig::shardOptimizer)},

      {"lora", "rank", Kind::Integer, 0, 65536, {}, member(&TrainConfig::loraRank)},
      {"lora", "alpha", Kind::Float, 0, kHuge, {}, member(&TrainConfig::loraAlpha)},
      {"lora", "targets", Kind::Strings, 0, 0,
       {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"},
       member(&TrainConfig::loraTargets)},
      {"lora", "train_mask_row", Kind::Bool, 0, 0, {},
       member(&TrainConfig::loraTrainMaskRow)},

      {"rl", "rollouts", Kind::Integer, 1, 4096, {}, member(&TrainConfig::rollouts)},
      {"rl", "clip", Kind::Float, 0, 10, {}, member(&TrainConfig::clip)},
      {"rl", "kl", Kind::Float, 0, kHuge, {}, member(&TrainConfig::klCoef)},
      {"rl", "speed_reward", Kind::Float, 0, kHuge, {},
       member(&TrainConfig::speedReward)},
      {"rl", "ppo_epochs", Kind::Integer, 1, 1000, {},
       member(&TrainConfig::ppoEpochs)},
      {"rl", "overlap_verification", Kind::Bool, 0, 0, {},
       member(&TrainConfig::overlapVerification)},
      {"rl", "old_logprobs", Kind::Choice, 0, 0, {"recorded", "recomputed"},
       member(&TrainConfig::oldLogprobs)},
      {"rl", "level_steps", Kind::Integers, 0, 1e12, {},
       member(&TrainConfig::levelSteps)},
      {"rl", "rollout_log", Kind::String, 0, 0, {},
       member(&TrainConfig::rolloutLog)},

      {"checkpoint", "dir", Kind::String, 0, 0, {},
       member(&TrainConfig::checkpointDir)},
      {"checkpoint", "every", Kind::Integer, 0, 1e12, {},
       member(&TrainConfig::checkpointEvery)},
      {"checkpoint", "shard_mb", Kind::Float, 0.001, 1 << 24, {},
       member(&TrainConfig::shardMb)},
      {"checkpoint", "resume", Kind::String, 0, 0, {},
       member(&TrainConfig::resume)},

      {"metrics", "path", Kind::String, 0, 0, {}, member(&TrainConfig::metricsPath)},
      {"metrics", "status", Kind::Choice, 0, 0, {"auto", "on", "off"},
       member(&TrainConfig::status)},
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

/// A TOML value spelled back as TOML, to hand [sampling] and [verifier]
/// keys to dice.toml's own loader.
std::string tomlSpelling(const toml::node &node) {
  std::ostringstream out;
  if (const auto *s = node.as_string())
    out << toml::value<std::string>(s->get());
  else if (const auto *i = node.as_integer())
    out << i->get();
  else if (const auto *f = node.as_floating_point())
    out << toml::value<double>(f->get());
  else if (const auto *b = node.as_boolean())
    out << (b->get() ? "true" : "false");
  else
    out << "[]"; // tables and arrays: the loader names the wrong type
  return out.str();
}

class Loader {
public:
  explicit Loader(std::string file) : file(std::move(file)) {}

  Status apply(const toml::table &root, TrainConfig &config) {
    for (auto &&[sectionKey, sectionNode] : root) {
      std::string section(sectionKey.str());
      bool forwarded = section == "sampling" || section == "verifier";
      if (!forwarded && !isSection(section))
        return error(sectionKey.source(), section,
                     "unknown section (known: run, model, data, optim, lora, rl, "
                     "sampling, verifier, checkpoint, metrics)");
      const toml::table *table = sectionNode.as_table();
      if (!table)
        return error(sectionNode.source(), section,
                     "must be a table, e.g. [" + section + "]");
      for (auto &&[key, node] : *table) {
        std::string dotted = section + "." + std::string(key.str());
        if (forwarded) {
          Status set = applyConfigOverride(config.dice, dotted, tomlSpelling(node));
          if (!set) {
            Error e = set.error();
            return error(node.source(), dotted, e.message);
          }
          continue;
        }
        const Field *field = findField(section, key.str());
        if (!field)
          return error(key.source(), dotted, "unknown key" + known(section));
        if (Status ok = check(*field, node, dotted); !ok)
          return ok;
        field->set(config, node);
      }
    }
    return {};
  }

private:
  std::string file;

  Error error(const toml::source_region &where, std::string key,
              std::string message) const {
    return Error(file, unsigned(where.begin.line), unsigned(where.begin.column),
                 std::move(key), std::move(message));
  }

  static std::string known(const std::string &section) {
    std::string list;
    for (const Field &f : schema())
      if (f.section == section)
        list += (list.empty() ? "" : ", ") + std::string(f.key);
    return " (known in [" + section + "]: " + list + ")";
  }

  static std::string number(double v) {
    std::ostringstream out;
    out << v;
    return out.str();
  }

  Status inRange(const Field &f, const toml::node &node, const std::string &key,
                 double v) const {
    if (v >= f.min && v <= f.max)
      return {};
    return error(node.source(), key,
                 "must be in [" + number(f.min) + ", " +
                     (f.max >= kHuge ? "inf)" : number(f.max) + "]") + ", got " +
                     number(v));
  }

  Status check(const Field &f, const toml::node &node,
               const std::string &key) const {
    auto wrong = [&](std::string_view want) {
      return error(node.source(), key, "must be " + std::string(want));
    };
    switch (f.kind) {
    case Kind::String:
      return node.is_string() ? Status() : wrong("a string");
    case Kind::Bool:
      return node.is_boolean() ? Status() : wrong("true or false");
    case Kind::Integer:
      if (!node.is_integer())
        return wrong("an integer");
      return inRange(f, node, key, double(node.as_integer()->get()));
    case Kind::Float:
      if (node.is_integer())
        return inRange(f, node, key, double(node.as_integer()->get()));
      if (!node.is_floating_point())
        return wrong("a number");
      return inRange(f, node, key, node.as_floating_point()->get());
    case Kind::Choice: {
      if (!node.is_string())
        return wrong("a string");
      return oneOf(f, node, key, node.as_string()->get());
    }
    case Kind::Strings:
    case Kind::Integers: {
      const toml::array *array = node.as_array();
      if (!array)
        return wrong(f.kind == Kind::Strings ? "an array of strings"
                                             : "an array of integers");
      int64_t previous = -1;
      for (const toml::node &e : *array) {
        if (f.kind == Kind::Strings) {
          if (!e.is_string())
            return error(e.source(), key, "must hold strings only");
          if (!f.choices.empty())
            if (Status ok = oneOf(f, e, key, e.as_string()->get()); !ok)
              return ok;
        } else {
          if (!e.is_integer())
            return error(e.source(), key, "must hold integers only");
          int64_t v = e.as_integer()->get();
          if (v <= previous)
            return error(e.source(), key, "must be increasing");
          previous = v;
        }
      }
      return {};
    }
    }
    return {};
  }

  Status oneOf(const Field &f, const toml::node &node, const std::string &key,
               std::string_view value) const {
    std::string options;
    for (std::string_view c : f.choices) {
      if (c == value)
        return {};
      options += (options.empty() ? "\"" : ", \"") + std::string(c) + "\"";
    }
    return error(node.source(), key,
                 "must be one of " + options + ", got \"" + std::string(value) +
                     "\"");
  }
};

/// Relative paths in a file name files beside it.
void resolvePaths(TrainConfig &c, const std::filesystem::path &base) {
  auto fix = [&](std::string &p) {
    if (!p.empty() && std::filesystem::path(p).is_relative())
      p = (base / p).lexically_normal().string();
  };
  fix(c.modelPath);
  for (std::string &p : c.sftFiles)
    fix(p);
  for (std::string &p : c.taskFiles)
    fix(p);
  fix(c.infillTemplate);
  fix(c.endToEndTemplate);
  fix(c.checkpointDir);
  fix(c.metricsPath);
  fix(c.rolloutLog);
  if (c.resume != "latest")
    fix(c.resume);
}

} // namespace

std::string_view toString(TrainStage stage) {
  switch (stage) {
  case TrainStage::Sft:
    return "sft";
  case TrainStage::RlInfill:
    return "rl-infill";
  case TrainStage::RlEndToEnd:
    return "rl-e2e";
  case TrainStage::EvalInfill:
    return "eval-infill";
  case TrainStage::EvalEndToEnd:
    return "eval-e2e";
  }
  return "";
}

Result<TrainConfig> parseTrainConfig(std::string_view text,
                                     std::string_view sourceName) {
  std::string file(sourceName);
  Result<toml::table> parsed = parseTomlDocument(text, file);
  if (!parsed)
    return parsed.error();
  TrainConfig config;
  if (Status ok = Loader(file).apply(*parsed, config); !ok)
    return ok.error();
  return config;
}

Result<TrainConfig> loadTrainConfigFile(const std::string &path) {
  Result<std::string> text = readFile(path);
  if (!text)
    return text.error();
  Result<TrainConfig> config = parseTrainConfig(*text, path);
  if (!config)
    return config;
  TrainConfig c = config.take();
  resolvePaths(c, std::filesystem::path(path).parent_path());
  return c;
}

Status applyTrainOverride(TrainConfig &config, std::string_view key,
                          std::string_view value) {
  size_t dot = key.find('.');
  if (dot == std::string_view::npos)
    return Error("", 0, 0, std::string(key), "expected section.key=value");
  std::string text = "[" + std::string(key.substr(0, dot)) + "]\n" +
                     std::string(key.substr(dot + 1)) + " = " +
                     std::string(value) + "\n";
  Result<toml::table> parsed = parseTomlDocument(text, "--set");
  if (!parsed)
    return Error("--set", 0, 0, std::string(key),
                 "cannot read the value: " + parsed.error().message);
  Status ok = Loader("--set").apply(*parsed, config);
  if (!ok) {
    Error e = ok.error();
    e.line = e.column = 0;
    return e;
  }
  return {};
}

} // namespace dice
