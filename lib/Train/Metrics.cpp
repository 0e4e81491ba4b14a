//===- Metrics.cpp - per-step metrics and the live status line ------------===//

#include "dice/Train/Metrics.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <unistd.h>

namespace dice {

Result<MetricsLog> MetricsLog::open(const std::string &path,
                                    const std::string &status) {
  std::error_code ec;
  std::filesystem::path p(path);
  if (p.has_parent_path())
    std::filesystem::create_directories(p.parent_path(), ec);
  MetricsLog log;
  log.out.open(path, std::ios::app);
  if (!log.out)
    return Error(path, "cannot be opened for appending");
  log.live = status == "on" || (status == "auto" && isatty(STDERR_FILENO));
  return log;
}

void MetricsLog::write(const std::map<std::string, Value> &metrics,
                       int64_t totalSteps) {
  nlohmann::json line = nlohmann::json::object();
  for (const auto &[key, value] : metrics)
    std::visit(
        [&](const auto &v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, double>)
            line[key] = std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
          else
            line[key] = v;
        },
        value);
  out << line.dump() << "\n";
  out.flush();
  if (!live)
    return;
  std::ostringstream status;
  auto get = [&](const char *key) -> const Value * {
    auto it = metrics.find(key);
    return it == metrics.end() ? nullptr : &it->second;
  };
  if (const Value *s = get("stage"))
    status << std::get<std::string>(*s) << " ";
  if (const Value *s = get("step"))
    status << "step " << std::get<int64_t>(*s) << "/" << totalSteps;
  status.setf(std::ios::fixed);
  status.precision(4);
  for (const char *key : {"loss", "reward_mean", "accept_rate", "kl"})
    if (const Value *v = get(key); v && std::holds_alternative<double>(*v))
      status << "  " << key << " " << std::get<double>(*v);
  status.precision(0);
  for (const char *key : {"tokens_per_s", "rollouts_per_s"})
    if (const Value *v = get(key); v && std::holds_alternative<double>(*v))
      status << "  " << key << " " << std::get<double>(*v);
  std::string text = status.str();
  if (text.size() > 150)
    text.resize(150);
  std::fprintf(stderr, "\r\033[K%s", text.c_str());
  std::fflush(stderr);
  lineOpen = true;
}

void MetricsLog::finish() {
  if (lineOpen)
    std::fprintf(stderr, "\n");
  lineOpen = false;
}

} // namespace dice
