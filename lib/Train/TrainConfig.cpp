//===- TrainConfig.cpp - dice-train's configuration -----------------------===//

#include "dice/Train/TrainConfig.h"
#include "dice/Config/ConfigSchema.h"
#include "dice/Config/TomlDocument.h"
#include "dice/Support/File.h"

#include <filesystem>

namespace dice {

using schema::Field;
using schema::into;
using schema::Kind;
using schema::kUnbounded;

namespace {

const std::vector<Field<TrainConfig>> &trainFields() {
  static const std::vector<Field<TrainConfig>> all = [] {
    std::vector<Field<TrainConfig>> fields = {
        {"run",
         "stage",
         {Kind::Choice,
          0,
          0,
          false,
          {"sft", "rl-infill", "rl-e2e", "eval-infill", "eval-e2e"}},
         [](TrainConfig &c, const toml::node &n) {
           std::string_view s = n.as_string()->get();
           c.stage = s == "sft"           ? TrainStage::Sft
                     : s == "rl-infill"   ? TrainStage::RlInfill
                     : s == "rl-e2e"      ? TrainStage::RlEndToEnd
                     : s == "eval-infill" ? TrainStage::EvalInfill
                                          : TrainStage::EvalEndToEnd;
         }},
        {"run", "steps", {Kind::Integer, 0, 1e12}, into(&TrainConfig::steps)},
        {"run", "seed", {Kind::Integer, 0, 9.2e18}, into(&TrainConfig::seed)},
        {"run",
         "device",
         {Kind::Choice, 0, 0, false, {"auto", "cpu", "cuda"}},
         into(&TrainConfig::device)},
        {"run",
         "precision",
         {Kind::Choice, 0, 0, false, {"fp32", "bf16"}},
         into(&TrainConfig::precision)},

        {"model", "path", {Kind::String}, into(&TrainConfig::modelPath)},
        {"model", "random_init", {Kind::Bool}, into(&TrainConfig::randomInit)},
        {"model",
         "gradient_checkpointing",
         {Kind::Bool},
         into(&TrainConfig::gradientCheckpointing)},

        {"data", "sft", {Kind::Strings}, into(&TrainConfig::sftFiles)},
        {"data", "tasks", {Kind::Strings}, into(&TrainConfig::taskFiles)},
        {"data",
         "infill_template",
         {Kind::String},
         into(&TrainConfig::infillTemplate)},
        {"data",
         "end_to_end_template",
         {Kind::String},
         into(&TrainConfig::endToEndTemplate)},
        {"data",
         "max_length",
         {Kind::Integer, 8, 1 << 20},
         into(&TrainConfig::maxLength)},
        {"data",
         "pack_length",
         {Kind::Integer, 16, 1 << 22},
         into(&TrainConfig::packLength)},
        {"data",
         "end_to_end_too",
         {Kind::Bool},
         into(&TrainConfig::endToEndToo)},
        {"data", "curriculum", {Kind::Bool}, into(&TrainConfig::curriculum)},
        {"data",
         "curriculum_ramp",
         {Kind::Float, 0, 1},
         into(&TrainConfig::curriculumRamp)},

        {"optim", "lr", {Kind::Float, 0, 1}, into(&TrainConfig::lr)},
        {"optim",
         "weight_decay",
         {Kind::Float, 0, 1},
         into(&TrainConfig::weightDecay)},
        {"optim",
         "beta1",
         {Kind::Float, 0, 0.999999},
         into(&TrainConfig::beta1)},
        {"optim",
         "beta2",
         {Kind::Float, 0, 0.999999999},
         into(&TrainConfig::beta2)},
        {"optim", "eps", {Kind::Float, 1e-30, 1}, into(&TrainConfig::eps)},
        {"optim",
         "grad_clip",
         {Kind::Float, 0, kUnbounded},
         into(&TrainConfig::gradClip)},
        {"optim",
         "warmup_steps",
         {Kind::Integer, 0, 1e12},
         into(&TrainConfig::warmupSteps)},
        {"optim",
         "schedule",
         {Kind::Choice, 0, 0, false, {"constant", "cosine"}},
         into(&TrainConfig::schedule)},
        {"optim",
         "min_lr_ratio",
         {Kind::Float, 0, 1},
         into(&TrainConfig::minLrRatio)},
        {"optim",
         "global_batch",
         {Kind::Integer, 1, 1 << 20},
         into(&TrainConfig::globalBatch)},
        {"optim",
         "micro_batch",
         {Kind::Integer, 1, 1 << 20},
         into(&TrainConfig::microBatch)},
        {"optim",
         "bucket_mb",
         {Kind::Float, 0.001, 1 << 20},
         into(&TrainConfig::bucketMb)},
        {"optim",
         "shard_optimizer",
         {Kind::Bool},
         into(&TrainConfig::shardOptimizer)},

        {"lora",
         "rank",
         {Kind::Integer, 0, 65536},
         into(&TrainConfig::loraRank)},
        {"lora",
         "alpha",
         {Kind::Float, 0, kUnbounded},
         into(&TrainConfig::loraAlpha)},
        {"lora",
         "targets",
         {Kind::Strings,
          0,
          0,
          false,
          {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
           "down_proj"}},
         into(&TrainConfig::loraTargets)},
        {"lora",
         "train_mask_row",
         {Kind::Bool},
         into(&TrainConfig::loraTrainMaskRow)},

        {"rl",
         "rollouts",
         {Kind::Integer, 1, 4096},
         into(&TrainConfig::rollouts)},
        {"rl", "clip", {Kind::Float, 0, 10}, into(&TrainConfig::clip)},
        {"rl", "kl", {Kind::Float, 0, kUnbounded}, into(&TrainConfig::klCoef)},
        {"rl",
         "speed_reward",
         {Kind::Float, 0, kUnbounded},
         into(&TrainConfig::speedReward)},
        {"rl",
         "ppo_epochs",
         {Kind::Integer, 1, 1000},
         into(&TrainConfig::ppoEpochs)},
        {"rl",
         "overlap_verification",
         {Kind::Bool},
         into(&TrainConfig::overlapVerification)},
        {"rl",
         "old_logprobs",
         {Kind::Choice, 0, 0, false, {"recorded", "recomputed"}},
         into(&TrainConfig::oldLogprobs)},
        {"rl",
         "level_steps",
         {Kind::Integers, 0, 1e12},
         into(&TrainConfig::levelSteps)},
        {"rl", "rollout_log", {Kind::String}, into(&TrainConfig::rolloutLog)},
    };
    // dice.toml's decoding and verification keys, by dice.toml's own rules.
    schema::appendPart(fields, configFields(), &TrainConfig::dice, "sampling");
    schema::appendPart(fields, configFields(), &TrainConfig::dice, "verifier");
    std::vector<Field<TrainConfig>> last = {
        {"checkpoint",
         "dir",
         {Kind::String},
         into(&TrainConfig::checkpointDir)},
        {"checkpoint",
         "every",
         {Kind::Integer, 0, 1e12},
         into(&TrainConfig::checkpointEvery)},
        {"checkpoint",
         "shard_mb",
         {Kind::Float, 0.001, 1 << 24},
         into(&TrainConfig::shardMb)},
        {"checkpoint", "resume", {Kind::String}, into(&TrainConfig::resume)},

        {"metrics", "path", {Kind::String}, into(&TrainConfig::metricsPath)},
        {"metrics",
         "status",
         {Kind::Choice, 0, 0, false, {"auto", "on", "off"}},
         into(&TrainConfig::status)},
    };
    fields.insert(fields.end(), last.begin(), last.end());
    return fields;
  }();
  return all;
}

/// Applies `root` onto `config`, then dice.toml's checks of the keys it
/// forwards.
Status applyDocument(const toml::table &root, TrainConfig &config,
                     const std::string &file) {
  schema::KeyRegions where;
  if (Status ok =
          schema::applySchema(trainFields(), root, config, file, &where);
      !ok)
    return ok;
  return checkConfigRelations(config.dice, where, file);
}

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
  if (Status ok = applyDocument(*parsed, config, file); !ok)
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
  Result<toml::table> parsed = schema::parseOverride(key, value, "--set");
  if (!parsed)
    return parsed.error();
  TrainConfig updated = config;
  if (Status ok = applyDocument(*parsed, updated, "--set"); !ok) {
    Error e = ok.error();
    e.line = e.column = 0; // lines of the synthetic text mean nothing
    return e;
  }
  config = std::move(updated);
  return {};
}

} // namespace dice
