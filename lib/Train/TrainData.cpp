//===- TrainData.cpp - SFT rows, RL task packs, their order ---------------===//

#include "dice/Train/TrainData.h"
#include "dice/Scaffold/Scaffold.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <random>

namespace dice {
namespace {

using json = nlohmann::json;

/// Reads a JSONL file line by line; `each` gets the object and its line.
Status forEachObject(const std::string &path,
                     const std::function<Status(const json &, unsigned)> &each) {
  std::ifstream in(path);
  if (!in)
    return Error(path, "cannot be read");
  std::string line;
  unsigned number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    json object = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (object.is_discarded())
      return Error(path, number, 0, "", "is not valid JSON");
    if (!object.is_object())
      return Error(path, number, 0, "", "is not a JSON object");
    if (Status ok = each(object, number); !ok)
      return ok;
  }
  return {};
}

Error fieldError(const std::string &path, unsigned line, const std::string &field,
                 const std::string &what) {
  return Error(path, line, 0, field, what);
}

/// A required or optional string field.
Status stringField(const json &o, const std::string &path, unsigned line,
                   const char *field, bool required, std::string &out) {
  auto it = o.find(field);
  if (it == o.end() || it->is_null()) {
    if (required)
      return fieldError(path, line, field, "is missing");
    return {};
  }
  if (!it->is_string())
    return fieldError(path, line, field, "must be a string");
  out = it->get<std::string>();
  return {};
}

Status levelField(const json &o, const std::string &path, unsigned line,
                  int64_t &out) {
  auto it = o.find("level");
  if (it == o.end())
    return fieldError(path, line, "level", "is missing");
  // The published rows spell levels as numbers or as "1".."3".
  if (it->is_number_integer())
    out = it->get<int64_t>();
  else if (it->is_string() && it->get<std::string>().size() == 1)
    out = it->get<std::string>()[0] - '0';
  else
    return fieldError(path, line, "level", "must be 1, 2 or 3");
  if (out < 1 || out > 3)
    return fieldError(path, line, "level", "must be 1, 2 or 3");
  return {};
}

/// The optional curriculum place: 0 where absent.
Status difficultyField(const json &o, const std::string &path, unsigned line,
                       int64_t &out) {
  auto it = o.find("difficulty");
  if (it == o.end())
    return {};
  if (!it->is_number_integer() || it->get<int64_t>() < 0)
    return fieldError(path, line, "difficulty", "must be an integer of at least 0");
  out = it->get<int64_t>();
  return {};
}

} // namespace

Result<std::vector<SftRow>> loadSftRows(const std::string &path) {
  std::vector<SftRow> rows;
  Status ok = forEachObject(path, [&](const json &o, unsigned line) -> Status {
    SftRow row;
    if (auto it = o.find("id"); it != o.end() && !it->is_null())
      row.id = it->is_string() ? it->get<std::string>() : it->dump();
    else
      row.id = path + ":" + std::to_string(line);
    for (auto [field, required, out] :
         {std::tuple<const char *, bool, std::string *>{"pytorch_code", true,
                                                        &row.pytorchCode},
          {"cuda_code", true, &row.cudaCode},
          {"prefix", false, &row.prefix},
          {"middle", false, &row.middle},
          {"suffix", false, &row.suffix},
          {"reference", false, &row.reference},
          {"signature", false, &row.signature}})
      if (Status s = stringField(o, path, line, field, required, *out); !s)
        return s;
    if (Status s = difficultyField(o, path, line, row.difficulty); !s)
      return s;
    // The published DICE rows carry no level: infilling rows default to 1.
    if (o.contains("level")) {
      if (Status s = levelField(o, path, line, row.level); !s)
        return s;
    }
    bool any = !row.prefix.empty() || !row.middle.empty() || !row.suffix.empty();
    if (any && row.middle.empty())
      return fieldError(path, line, "middle",
                        "is missing: an infilling row needs prefix, middle and "
                        "suffix");
    if (row.pytorchCode.empty())
      return fieldError(path, line, "pytorch_code", "is empty");
    if (!any && row.cudaCode.empty())
      return fieldError(path, line, "cuda_code", "is empty");
    rows.push_back(std::move(row));
    return {};
  });
  if (!ok)
    return ok.error();
  if (rows.empty())
    return Error(path, "holds no rows");
  return rows;
}

Result<std::vector<TaskPackRow>> loadTaskPack(const std::string &path) {
  std::vector<TaskPackRow> rows;
  Status ok = forEachObject(path, [&](const json &o, unsigned line) -> Status {
    TaskPackRow row;
    for (auto [field, out] :
         {std::pair<const char *, std::string *>{"id", &row.id},
          {"fingerprint", &row.fingerprint},
          {"signature", &row.signature},
          {"infill_prompt", &row.infillPrompt},
          {"end_to_end_prompt", &row.endToEndPrompt}})
      if (Status s = stringField(o, path, line, field, true, *out); !s)
        return s;
    if (Status s = levelField(o, path, line, row.level); !s)
      return s;
    if (Status s = difficultyField(o, path, line, row.difficulty); !s)
      return s;
    auto program = o.find("program");
    if (program == o.end())
      return fieldError(path, line, "program", "is missing");
    if (!program->is_object())
      return fieldError(path, line, "program",
                        "must be the reference program (a JSON object)");
    row.programJson = program->dump();
    rows.push_back(std::move(row));
    return {};
  });
  if (!ok)
    return ok.error();
  if (rows.empty())
    return Error(path, "holds no tasks");
  return rows;
}

std::pair<std::string, std::string>
sftPromptAndAnswer(const SftRow &row, const Tokenizer &tokenizer,
                   const PromptTemplates &templates) {
  const std::string &architecture = row.reference.empty() ? row.pytorchCode : row.reference;
  std::string message =
      row.infill() ? infillMessage(architecture, row.prefix, row.suffix, row.signature, templates)
                   : endToEndMessage(architecture, templates, row.signature);
  std::string code = row.infill() ? row.middle : row.cudaCode;
  if (!code.empty() && code.back() != '\n')
    code += '\n';
  std::string prompt = tokenizer.applyChatTemplate(message);
  std::string full =
      tokenizer.applyChatTemplate(message, "```python\n" + code + "```");
  std::string answer = full.substr(std::min(prompt.size(), full.size()));
  // The answer ends at the stop token, as a decode does.
  const std::string stop = "<|im_end|>";
  if (size_t end = answer.rfind(stop); end != std::string::npos)
    answer.resize(end + stop.size());
  return {prompt, answer};
}

std::vector<SftSample> tokenizeSft(const std::vector<SftRow> &rows,
                                   const Tokenizer &tokenizer, int64_t maxLength,
                                   int64_t &tooLong, const PromptTemplates &templates) {
  std::vector<SftSample> samples;
  tooLong = 0;
  for (const SftRow &row : rows) {
    auto [prompt, answer] = sftPromptAndAnswer(row, tokenizer, templates);
    SftSample s{tokenizer.encode(prompt), tokenizer.encode(answer), row.difficulty};
    if (int64_t(s.prompt.size() + s.answer.size()) > maxLength) {
      ++tooLong;
      continue;
    }
    samples.push_back(std::move(s));
  }
  return samples;
}

std::vector<size_t> epochOrder(size_t count, uint64_t seed, int64_t epoch) {
  std::vector<size_t> order(count);
  for (size_t i = 0; i < count; ++i)
    order[i] = i;
  std::mt19937_64 rng(seed * 1000003ull + uint64_t(epoch));
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

SftCurriculum::SftCurriculum(const std::vector<SftSample> &samples, uint64_t seed,
                             int64_t rampSteps)
    : order(epochOrder(samples.size(), seed, 0)), seed(seed), rampSteps(rampSteps) {
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return samples[a].difficulty < samples[b].difficulty;
  });
}

size_t SftCurriculum::allowed(int64_t step) const {
  const int64_t n = int64_t(order.size()), first = std::max<int64_t>(1, (n + 9) / 10);
  if (rampSteps <= 0 || step >= rampSteps)
    return size_t(n);
  return size_t(first + (n - first) * std::max<int64_t>(0, step) / rampSteps);
}

size_t SftCurriculum::draw(int64_t step, int64_t place) const {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + uint64_t(place));
  return order[size_t(rng() % allowed(step))];
}

TaskSchedule::TaskSchedule(const std::vector<TaskPackRow> &tasks,
                           std::vector<int64_t> levelSteps, uint64_t seed, bool curriculum)
    : levelSteps(std::move(levelSteps)) {
  std::vector<size_t> shuffled = epochOrder(tasks.size(), seed, 0);
  auto key = [&](size_t i) {
    return std::pair(tasks[i].level, curriculum ? tasks[i].difficulty : 0);
  };
  std::stable_sort(shuffled.begin(), shuffled.end(),
                   [&](size_t a, size_t b) { return key(a) < key(b); });
  order = shuffled;
  for (const TaskPackRow &t : tasks)
    levelOf.push_back(t.level);
}

int64_t TaskSchedule::maxLevel(int64_t step) const {
  for (size_t k = 0; k < levelSteps.size(); ++k)
    if (step < levelSteps[k])
      return int64_t(k) + 1;
  return 3;
}

std::vector<size_t> TaskSchedule::tasksOfStep(int64_t step, int64_t count) const {
  std::vector<size_t> allowed;
  int64_t top = levelSteps.empty() ? 3 : maxLevel(step);
  for (size_t i : order)
    if (levelOf[i] <= top)
      allowed.push_back(i);
  if (allowed.empty()) // no task of the scheduled levels: every task
    allowed = order;
  // The level-ordered stream, cycled: step s takes the next `count`.
  std::vector<size_t> out;
  for (int64_t k = 0; k < count; ++k)
    out.push_back(allowed[size_t((step * count + k) % int64_t(allowed.size()))]);
  return out;
}

} // namespace dice
