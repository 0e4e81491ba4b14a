//===- Metrics.cpp - per-step metrics and the live status line ------------===//

#include "dice/Train/Metrics.h"
#include "dice/Support/File.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace dice {

Status dropLoggedStepsAfter(const std::string &path, const std::string &stage,
                            int64_t step) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0 && errno == ENOENT)
    return {};
  Result<std::string> text = readFile(path);
  if (!text)
    return text.error();
  std::vector<std::string_view> lines;
  std::string_view rest = *text;
  bool torn = false;
  while (!rest.empty()) {
    size_t end = rest.find('\n');
    if (end == std::string_view::npos) {
      torn = true; // killed inside a write
      break;
    }
    lines.push_back(rest.substr(0, end + 1));
    rest.remove_prefix(end + 1);
  }
  // Where each line says it is: its stage and step, when it has both.
  using Place = std::optional<std::pair<std::string, int64_t>>;
  auto place = [](std::string_view line) -> Place {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("stage") ||
        !j["stage"].is_string() || !j.contains("step") ||
        !j["step"].is_number_integer())
      return std::nullopt;
    return std::make_pair(j["stage"].get<std::string>(),
                          j["step"].get<int64_t>());
  };
  std::optional<size_t> checkpointed;
  std::vector<Place> places;
  for (size_t i = 0; i < lines.size(); ++i) {
    places.push_back(place(lines[i]));
    if (places.back() && places.back()->first == stage &&
        places.back()->second == step)
      checkpointed = i;
  }
  std::string kept;
  size_t dropped = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (checkpointed && i > *checkpointed && places[i] &&
        places[i]->first == stage && places[i]->second > step) {
      ++dropped;
      continue;
    }
    kept += lines[i];
  }
  if (!dropped && !torn)
    return {};
  return writeFileAtomically(path, kept);
}

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
