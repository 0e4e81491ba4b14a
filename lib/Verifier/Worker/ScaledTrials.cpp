//===- ScaledTrials.cpp - the first trial's inputs, scaled down and up ----===//
//
// After the trials, the candidate runs twice more: on the first trial's
// inputs scaled down, then up, by a power of two. Each result's tolerance
// follows the reference's own scale (trialTolerance), so a kernel whose
// error is fixed in absolute terms fails at one of the two scales though
// it passed at the natural one: zeros written for results that happen to
// be small, half precision inside a float32 kernel, a term dropped as
// negligible. Where a scale takes the reference out of its range (an exp
// that overflows), that scale is skipped: the operation does not allow it.
//
//===----------------------------------------------------------------------===//

#include "Checker.h"
#include "DeviceLock.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/cuda/CUDAFunctions.h>

#include <cmath>

namespace dice {
namespace dynamic_check {
namespace {

/// Powers of two, so that scaling is exact. float16 has five exponent
/// bits: its inputs move less.
struct Scale {
  const char *name;
  int exponent;     ///< float32, float64, bfloat16
  int halfExponent; ///< float16
};
constexpr Scale kScales[] = {{"down", -20, -4}, {"up", 8, 2}};

std::vector<at::Tensor> scaledInputs(const std::vector<at::Tensor> &inputs,
                                     const Scale &scale) {
  std::vector<at::Tensor> out;
  for (const at::Tensor &input : inputs) {
    if (!at::isFloatingType(input.scalar_type())) {
      out.push_back(input.clone());
      continue;
    }
    int exponent = input.scalar_type() == at::kHalf ? scale.halfExponent
                                                    : scale.exponent;
    out.push_back(input * std::ldexp(1.0, exponent));
  }
  return out;
}

/// `inputs` with every floating element moved up or down (a fixed
/// pattern) by about two units in the last place of its dtype.
std::vector<at::Tensor> jittered(const std::vector<at::Tensor> &inputs) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(0x5ca1edULL);
  std::vector<at::Tensor> out;
  for (const at::Tensor &input : inputs) {
    if (!at::isFloatingType(input.scalar_type())) {
      out.push_back(input.clone());
      continue;
    }
    int bits = 22; // float32's 23 mantissa bits, less one
    if (input.scalar_type() == at::kDouble)
      bits = 51;
    else if (input.scalar_type() == at::kHalf)
      bits = 9;
    else if (input.scalar_type() == at::kBFloat16)
      bits = 6;
    at::Tensor signs = at::empty(input.sizes(), at::kDouble)
                           .bernoulli_(0.5, gen)
                           .mul_(2)
                           .sub_(1);
    at::Tensor factor = (signs * std::ldexp(1.0, -bits) + 1).to(input.device());
    out.push_back((input.to(at::kDouble) * factor).to(input.scalar_type()));
  }
  return out;
}

/// Whether any result is infinite or NaN where the natural scale's is not.
bool leavesRange(const std::vector<at::Tensor> &natural,
                 const std::vector<at::Tensor> &scaled) {
  for (size_t i = 0; i < natural.size() && i < scaled.size(); ++i) {
    if (!at::isFloatingType(scaled[i].scalar_type()) ||
        natural[i].sizes() != scaled[i].sizes())
      continue;
    at::Tensor newly =
        scaled[i].isfinite().logical_not().logical_and(natural[i].isfinite());
    if (newly.any().item<bool>())
      return true;
  }
  return false;
}

} // namespace

bool Checker::checkScaledInputs(const c10::OperatorHandle &op,
                                const DynamicCheckRequest &request,
                                DynamicCheckOutcome &outcome) {
  Verdict &verdict = outcome.verdict;
  const ReferenceProgram &program = request.program;
  c10::Device cuda(c10::kCUDA, c10::cuda::current_device());
  std::vector<at::Tensor> natural = firstTrialInputs(program, request.seed, cuda);
  bool anyFloating = false;
  for (const at::Tensor &input : natural)
    anyFloating = anyFloating || at::isFloatingType(input.scalar_type());
  if (!anyFloating) {
    outcome.details["scaled_trials"] = "none: no floating-point inputs";
    return true;
  }
  Json log = Json::array();
  for (const Scale &scale : kScales) {
    DeviceLock::process().yieldToTimers();
    std::string when = std::string("in the trial at the first trial's inputs "
                                   "scaled ") +
                       scale.name + " (by 2^" + std::to_string(scale.exponent) +
                       ", float16 by 2^" + std::to_string(scale.halfExponent) + ")";
    Json entry = {{"scale", scale.name},
                  {"exponent", scale.exponent},
                  {"half_exponent", scale.halfExponent}};
    std::vector<at::Tensor> inputs = scaledInputs(natural, scale);
    std::vector<at::Tensor> pristine;
    for (const at::Tensor &input : inputs)
      pristine.push_back(input.clone());
    ReferenceRun reference = runReferenceProgram(program, pristine, cuda);
    std::vector<at::Tensor> precise;
    if (!reference.ok())
      entry["skipped"] = "the reference program fails: " + reference.error;
    else if (leavesRange(firstReference, reference.outputs))
      entry["skipped"] = "the reference leaves its range (infinities or NaN "
                         "the natural scale does not have)";
    else if ((precise = preciseOutputs(program, pristine, request,
                                       outcome.details))
                 .empty())
      entry["skipped"] = "no float64 reference to scale the tolerance by";
    if (!entry.contains("skipped")) {
      ReferenceRun shaken = runReferenceProgram(program, jittered(pristine), cuda);
      Difference self =
          shaken.ok() ? compareWithReference(shaken.outputs, reference.outputs, precise,
                                             Distribution::Normal, request)
                      : Difference{};
      if (!self.problem.empty())
        entry["skipped"] = "the reference is unstable at this scale: with its inputs "
                           "moved by about two units in the last place, its " +
                           self.problem;
    }
    if (entry.contains("skipped")) {
      log.push_back(entry);
      continue;
    }

    CallResult call;
    int64_t own = 0;
    Json kernels;
    auto fail = [&](const std::string &reason) {
      setVerdict(verdict, VerdictStatus::Incorrect, reason);
      entry["problem"] = reason;
      log.push_back(entry);
      outcome.details["scaled_trials"] = log;
      return false;
    };
    if (!tracedCall(op, request, inputs, /*poison=*/0, when, call, outcome,
                    own, kernels)) {
      log.push_back(entry);
      outcome.details["scaled_trials"] = log;
      return false;
    }
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!bitIdentical(inputs[i], pristine[i]))
        return fail("inputs were modified: input " + std::to_string(i) +
                    " changed during the call " + when +
                    "; write results to new tensors");
    if (std::string wrong = checkResults(program, call.results, cuda);
        !wrong.empty())
      return fail("the candidate " + wrong + " (" + when + ")");
    Difference d = compareWithReference(call.results, reference.outputs,
                                        precise, Distribution::Normal, request);
    entry["max_abs_err"] = d.maxAbs;
    entry["norm_err"] = d.normErr;
    if (!d.problem.empty())
      return fail(d.problem + " " + when +
                  ": its error does not shrink with its results");
    log.push_back(entry);
  }
  outcome.details["scaled_trials"] = log;
  return true;
}

} // namespace dynamic_check
} // namespace dice
