//===- CheckSteps.h - the pieces of a dynamic check -------------*- C++ -*-===//
//
// The steps the checker (Checker.h) is made of, one source file each:
// formatting of reasons (CheckFormatting.cpp), the trials' inputs
// (TrialInputs.cpp), the comparison of results with the reference
// (OutputComparison.cpp), and one call of the candidate with the rules that
// judge its kernel trace (CandidateCall.cpp). Private to DiceVerifierWorker.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_VERIFIERWORKER_CHECKSTEPS_H
#define DICE_VERIFIERWORKER_CHECKSTEPS_H

#include "CandidateTiming.h"
#include "KernelTrace.h"
#include "dice/VerifierWorker/DynamicCheck.h"

#include "dice/Reference/AtenExecutor.h"
#include "dice/Reference/ReferenceProgram.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <cuda_runtime_api.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

namespace dice {
namespace dynamic_check {

using Json = nlohmann::json;

//===----------------------------------------------------------------------===//
// Formatting
//===----------------------------------------------------------------------===//

std::string number(double value);

template <typename Range> std::string shapeString(const Range &shape) {
  std::string text = "[";
  bool first = true;
  for (int64_t size : shape) {
    text += (first ? "" : ", ") + std::to_string(size);
    first = false;
  }
  return text + "]";
}

std::string dtypeString(at::ScalarType type);

/// `[i, j]` of flat index `flat` in a row-major tensor of `shape`.
std::string indexString(int64_t flat, at::IntArrayRef shape);

std::string exceptionMessage(const std::exception &e);

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

enum class Distribution { Normal, Uniform, HeavyTailed, AwayFromZero };

const char *distributionName(Distribution distribution);
Distribution distributionOfTrial(int64_t trial);
uint64_t seedOfTrial(uint64_t seed, int64_t trial);

/// The program's inputs for one trial, generated on the CPU and moved to
/// `device`.
std::vector<at::Tensor> makeInputs(const ReferenceProgram &program,
                                   Distribution distribution, uint64_t seed,
                                   c10::Device device);

/// The first trial's inputs: the CPU smoke run, the scaled trials and the
/// timed runs all use them.
std::vector<at::Tensor> firstTrialInputs(const ReferenceProgram &program,
                                         uint64_t seed, c10::Device device);

bool bitIdentical(const at::Tensor &a, const at::Tensor &b);

/// A CPU copy of `tensor` whose memory the host cannot read: in the CPU
/// smoke run the inputs stand for device memory, so a candidate that
/// dereferences an input on the host faults here as it would on a GPU.
at::Tensor unreadableCopy(const at::Tensor &tensor);

//===----------------------------------------------------------------------===//
// Outputs
//===----------------------------------------------------------------------===//

struct Tolerance {
  double atol = 0, rtol = 0;
  /// The limit of ||got - want|| / ||want|| over the finite elements; 0
  /// for none (integers, KernelBench's comparison, no float64 reference).
  double normTol = 0;
  /// Added to the norm limit: the reference's own rounding error, so that
  /// a kernel more exact than the reference is not held to its errors.
  double normSlack = 0;
  /// torch.allclose(got, want, rtol, atol): NaN never matches.
  bool allclose = false;
};

Tolerance toleranceOf(at::ScalarType type, const DynamicCheckRequest &request);

/// The reference program with every floating dtype widened to float64,
/// and inputs to match: its results measure the reference's own rounding.
ReferenceProgram inFloat64(const ReferenceProgram &program);
std::vector<at::Tensor> inFloat64(const std::vector<at::Tensor> &inputs);

/// The tolerance of one result's comparison (docs/verifier.md, "Results").
/// Scaled comparison: atol scales with the reference's root mean square
/// (heavy-tailed trials: its largest magnitude, at least 1), and atol and
/// the norm limit both grow by 4x the reference's own error against
/// `precise`, its float64 run. Without `precise` atol never shrinks and
/// there is no norm limit. KernelBench's comparison: allclose with
/// atol = rtol = request.kernelbenchTolerance.
Tolerance trialTolerance(const at::Tensor &reference, const at::Tensor *precise,
                         Distribution distribution,
                         const DynamicCheckRequest &request);

/// What is wrong with the shape of a call's results; empty when they match
/// the program's results.
std::string checkResults(const ReferenceProgram &program,
                         const std::vector<at::Tensor> &results,
                         c10::Device device);

struct Difference {
  std::string problem; ///< empty: within tolerance
  double maxAbs = 0;
  double maxRel = 0; ///< relative to max(|reference|, atol)
  /// ||got - want|| / ||want|| over the finite elements (0 when ||want|| is).
  double normErr = 0;
};

/// Compares `got` with `want` (same dtype and shape): NaN and infinity
/// positions must agree, finite elements within `atol + rtol * |want|` and,
/// with a norm limit, ||got - want|| <= normTol * ||want|| + normSlack;
/// integers and bools exactly. With `allclose`, torch.allclose's rule.
Difference compareTensors(const at::Tensor &got, const at::Tensor &want,
                          Tolerance tol, const std::string &label);

/// The reference's results in float64 (inFloat64), which measure its own
/// rounding for trialTolerance; empty under KernelBench's comparison or
/// where the program does not run in float64 (noted once in `details`).
std::vector<at::Tensor> preciseOutputs(const ReferenceProgram &program,
                                       const std::vector<at::Tensor> &inputs,
                                       const DynamicCheckRequest &request,
                                       Json &details);

/// Every result against the reference, each with its trialTolerance; the
/// first problem, and the largest errors over the results.
Difference compareWithReference(const std::vector<at::Tensor> &results,
                                const std::vector<at::Tensor> &reference,
                                const std::vector<at::Tensor> &precise,
                                Distribution distribution,
                                const DynamicCheckRequest &request);

/// Whether the reference's result changed between two trials by more than
/// rounding: 4 units in the last place of `dtype` (the result's), relative
/// to its norm; integers and bools: any element.
bool referenceChanged(const at::Tensor &before, const at::Tensor &after,
                      at::ScalarType dtype);

/// Fills freshly allocated memory of the results' sizes with a poison and
/// frees it, so elements the candidate never writes show up. `which` picks
/// NaN (0) or a large finite value (1).
void poisonAllocator(const ReferenceProgram &program, int which,
                     c10::Device device);

//===----------------------------------------------------------------------===//
// Calling the candidate
//===----------------------------------------------------------------------===//

struct CallResult {
  std::vector<at::Tensor> results;
  std::string thrown; ///< the candidate's exception
  std::string badReturn;
  std::optional<CudaFault> fault;
  bool sticky = false; ///< the fault poisoned the context
};

bool isStickyError(cudaError_t error);

/// A sticky error is returned by every later call, clearing or not.
bool contextIsBroken();

/// Calls the operator boxed. On the CPU the operator's CUDA kernel is
/// called directly: the inputs carry the CPU key, the library registers
/// only CUDA.
CallResult callOperator(const c10::OperatorHandle &op,
                        const std::vector<at::Tensor> &inputs, bool onCuda);

Json kernelsJson(const KernelTraceResult &trace);

/// Why the trace makes the candidate deceptive; empty when it does not.
/// `callReturned`: whether the call returned (rather than threw); a call
/// that threw before launching anything is wrong, not deceptive, so only
/// foreign kernels count against it.
std::string judgeTrace(const KernelTraceResult &trace, int64_t &ownKernels,
                       bool callReturned = true);

} // namespace dynamic_check
} // namespace dice

#endif // DICE_VERIFIERWORKER_CHECKSTEPS_H
