//===- FunctionPlan.h - a whole function as reference steps -----*- C++ -*-===//
//
// A function plan: the function's arguments, the weights it closes over and
// one reference program per kernel request (or other step), wired by value
// numbers. Running it computes the whole function with ATen, the way the
// verifier's end-to-end check does.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_TOOLS_FUNCTIONPLAN_H
#define DICE_TOOLS_FUNCTIONPLAN_H

#include "dice/Reference/ReferenceProgram.h"
#include "dice/Support/Result.h"

#include <ATen/core/Tensor.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dice {

struct PlanStep {
  enum class Kind { Weight, Program, Kernel } kind = Kind::Program;
  // Weight: a constant tensor, from its raw little-endian bytes.
  int result = -1;
  TensorType type;
  std::vector<uint8_t> bytes;
  // Program: `program`'s inputs are `args`, its outputs become `results`.
  std::vector<int> args, results;
  ReferenceProgram program;
  std::string request; ///< the kernel request's fingerprint, if any
  // Kernel: a call of an accepted kernel (dice-lower's manifest has it),
  // `args` in, `results` out.
  std::string fingerprint;
};

/// Calls kernel `fingerprint` on `inputs`; returns its results, or an error.
using KernelCaller = std::function<std::string(
    const std::string &fingerprint, const std::vector<at::Tensor> &inputs,
    size_t numResults, std::vector<at::Tensor> &results)>;

struct FunctionPlan {
  std::string function;
  std::vector<TensorType> arguments; ///< values 0..arguments.size()-1
  std::vector<SizeSymbol> symbols;   ///< the arguments' dynamic sizes
  std::vector<PlanStep> steps;
  std::vector<int> outputs;

  /// Parses the plan JSON, whole or not at all: the error's `key` names
  /// the field at fault ("steps[2].program.ops[0].value").
  static Result<FunctionPlan> fromJson(std::string_view text);
};

/// Runs `plan` on `arguments` (all on one device; weights are moved there).
/// Kernel steps go to `callKernel`; a plan with kernel steps and no caller
/// is an error. Returns an error naming the step, or an empty string.
std::string runFunctionPlan(const FunctionPlan &plan,
                            const std::vector<at::Tensor> &arguments,
                            std::vector<at::Tensor> &outputs,
                            const KernelCaller &callKernel = {});

} // namespace dice

#endif // DICE_TOOLS_FUNCTIONPLAN_H
