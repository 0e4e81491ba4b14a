//===- TrainData.h - SFT rows, RL task packs, their order -------*- C++ -*-===//
//
// SFT rows are JSONL in the CuKe shape (`pytorch_code`, `cuda_code`, `level`,
// optional `id`, `prefix`, `middle`, `suffix`: the published DICE rows load
// unchanged). A row with prefix, middle and suffix is a kernel-infilling
// sample (the answer is the hole), one without is an end-to-end sample (the
// answer is the whole program). RL tasks are the task packs `dice train
// prepare` writes where the compiler is: the compiler's own scaffold of each
// kernel request. Every malformed line is an error naming the file, line and
// field.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_TRAIN_TRAINDATA_H
#define DICE_TRAIN_TRAINDATA_H

#include "dice/Model/Tokenizer.h"
#include "dice/Scaffold/PromptTemplate.h"
#include "dice/Support/Result.h"
#include "dice/Train/DiffusionLoss.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dice {

struct SftRow {
  std::string id;
  std::string pytorchCode, cudaCode;
  std::string prefix, middle, suffix; ///< all three, or none
  /// The architecture as the compiler shows it (the printed reference
  /// program); when present the prompt shows it instead of pytorch_code, so
  /// training sees the prompt compiling will.
  std::string reference;
  /// The `dice_forward` declaration the prompt names (optional, as above).
  std::string signature;
  int64_t level = 1;
  /// The curriculum's order, 0 (none given) upward: the data engine's
  /// `difficulty` (docs/corpus.md).
  int64_t difficulty = 0;
  bool infill() const { return !middle.empty(); }
};

struct TaskPackRow {
  std::string id;
  int64_t level = 1;
  int64_t difficulty = 0; ///< as SftRow's

  std::string fingerprint, signature;
  std::string programJson; ///< the reference program
  std::string infillPrompt, endToEndPrompt; ///< chat-formatted, as compiled
};

Result<std::vector<SftRow>> loadSftRows(const std::string &path);
Result<std::vector<TaskPackRow>> loadTaskPack(const std::string &path);

/// The row's prompt (chat-formatted, worded by `templates` as the compiler
/// words it) and answer (what the model should write, ending with the stop
/// token).
std::pair<std::string, std::string>
sftPromptAndAnswer(const SftRow &row, const Tokenizer &tokenizer,
                   const PromptTemplates &templates = PromptTemplates::builtin());

/// Tokenizes rows; those longer than `maxLength` tokens are left out and
/// counted in `tooLong`.
std::vector<SftSample>
tokenizeSft(const std::vector<SftRow> &rows, const Tokenizer &tokenizer,
            int64_t maxLength, int64_t &tooLong,
            const PromptTemplates &templates = PromptTemplates::builtin());

/// The order tasks are drawn in: by level (single op, fusion, whole model),
/// each level shuffled by `seed`, and with `curriculum` from easy to hard
/// within a level (the tasks' difficulty). With `levelSteps`, step s draws
/// only from the levels allowed at s (levels 1..k+1 below levelSteps[k]).
class TaskSchedule {
public:
  TaskSchedule(const std::vector<TaskPackRow> &tasks,
               std::vector<int64_t> levelSteps, uint64_t seed, bool curriculum = false);
  /// The `count` task indices of step `step` (deterministic in the step, so
  /// a resumed run draws the same).
  std::vector<size_t> tasksOfStep(int64_t step, int64_t count) const;
  /// The highest level step `step` may draw.
  int64_t maxLevel(int64_t step) const;

private:
  std::vector<size_t> order; ///< by level (and difficulty), shuffled within
  std::vector<int64_t> levelOf;
  std::vector<int64_t> levelSteps;
};

/// Sample indices of one epoch, shuffled by (seed, epoch).
std::vector<size_t> epochOrder(size_t count, uint64_t seed, int64_t epoch);

/// The SFT curriculum (`data.curriculum`), competence-based: the samples
/// easy to hard (by difficulty, shuffled by `seed` within one), of which
/// step s draws from the easiest ones: a tenth of them at step 0, growing
/// linearly to all of them at step `rampSteps`.
class SftCurriculum {
public:
  SftCurriculum(const std::vector<SftSample> &samples, uint64_t seed, int64_t rampSteps);
  /// How many of the easiest samples step `step` draws from.
  size_t allowed(int64_t step) const;
  /// The sample at stream place `place` of step `step` (deterministic in
  /// both, so a resumed run draws the same).
  size_t draw(int64_t step, int64_t place) const;

private:
  std::vector<size_t> order; ///< easy to hard
  uint64_t seed;
  int64_t rampSteps;
};

} // namespace dice

#endif // DICE_TRAIN_TRAINDATA_H
