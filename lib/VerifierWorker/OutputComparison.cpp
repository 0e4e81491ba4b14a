//===- OutputComparison.cpp - results against the reference ---------------===//
//
// Whether a call's results are what the reference program computes: their
// shapes, dtypes and devices, the elements within the trial's tolerance,
// and the allocator poison that exposes elements never written.
//
//===----------------------------------------------------------------------===//

#include "CheckSteps.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

namespace dice {
namespace dynamic_check {
namespace {

int64_t countOf(const at::Tensor &mask) { return mask.sum().item<int64_t>(); }

int64_t firstOf(const at::Tensor &mask) {
  return mask.reshape({-1}).nonzero()[0][0].item<int64_t>();
}

double valueAt(const at::Tensor &tensor, int64_t flat) {
  return tensor.reshape({-1})[flat].item<double>();
}

} // namespace

Tolerance toleranceOf(at::ScalarType type, const DynamicCheckRequest &request) {
  if (type == at::kHalf || type == at::kBFloat16)
    return {request.halfAtol, request.halfRtol};
  if (at::isFloatingType(type))
    return {request.atol, request.rtol};
  return {0, 0};
}

/// The tolerance of one trial's comparison. Heavy-tailed inputs reach
/// magnitudes where fp32 rounding of a long sum exceeds any fixed absolute
/// tolerance whatever the summation order (a 512-term dot product of values
/// near 100 rounds at about 1e-3), so that trial's atol scales with the
/// reference's largest finite magnitude: it still catches wrong, missing and
/// overflowed elements, not rounding that ATen itself could have produced.
Tolerance trialTolerance(const at::Tensor &reference, Distribution distribution,
                         const DynamicCheckRequest &request) {
  Tolerance tol = toleranceOf(reference.scalar_type(), request);
  if (distribution != Distribution::HeavyTailed || tol.atol == 0 ||
      reference.numel() == 0)
    return tol;
  double largest = reference.detach()
                       .to(at::kDouble)
                       .abs()
                       .nan_to_num(0, 0, 0)
                       .max()
                       .item<double>();
  tol.atol *= std::max(1.0, largest);
  return tol;
}

/// What is wrong with the shape of a call's results; empty when they match
/// the program's results.
std::string checkResults(const ReferenceProgram &program,
                         const std::vector<at::Tensor> &results,
                         c10::Device device) {
  if (results.size() != program.outputs.size())
    return "returned " + std::to_string(results.size()) +
           " tensors; the program has " +
           std::to_string(program.outputs.size()) + " results";
  for (size_t i = 0; i < results.size(); ++i) {
    const TensorType &want = program.typeOf(program.outputs[i]);
    const at::Tensor &got = results[i];
    std::string label = "result " + std::to_string(i);
    if (!got.defined())
      return label + " is an undefined tensor";
    if (fromScalarType(got.scalar_type()) != want.dtype)
      return label + " has dtype " + dtypeString(got.scalar_type()) +
             ", expected " + dtypeName(want.dtype);
    if (got.sizes() != at::IntArrayRef(want.shape))
      return label + " has shape " + shapeString(got.sizes()) +
             ", expected " + shapeString(want.shape);
    if (got.device().type() != device.type())
      return label + " is on " + got.device().str() + ", expected " +
             c10::DeviceTypeName(device.type(), /*lower_case=*/true);
  }
  return "";
}

/// Compares `got` with `want` (same dtype and shape): NaN and infinity
/// positions must agree, finite elements within `atol + rtol * |want|`;
/// integers and bools exactly.
Difference compareTensors(const at::Tensor &got, const at::Tensor &want,
                          Tolerance tol, const std::string &label) {
  Difference diff;
  if (want.numel() == 0)
    return diff;
  at::IntArrayRef shape = want.sizes();
  at::Tensor g = got.detach().to(at::kDouble);
  at::Tensor w = want.detach().to(at::kDouble);
  auto firstMismatch = [&](const at::Tensor &mask, int64_t &count) {
    int64_t flat = firstOf(mask);
    count = countOf(mask);
    return indexString(flat, shape) + ": got " + number(valueAt(g, flat)) +
           ", expected " + number(valueAt(w, flat));
  };
  auto of = [&](int64_t count) {
    return std::to_string(count) + " of " + std::to_string(want.numel()) +
           " elements";
  };
  int64_t count = 0;
  if (at::isFloatingType(want.scalar_type())) {
    at::Tensor gNan = g.isnan(), wNan = w.isnan();
    at::Tensor extraNan = gNan.logical_and(wNan.logical_not());
    if (extraNan.any().item<bool>()) {
      std::string where = firstMismatch(extraNan, count);
      diff.problem = label + " is NaN where the reference is not, in " +
                     of(count) + " (first at " + where + ")";
      return diff;
    }
    at::Tensor missingNan = wNan.logical_and(gNan.logical_not());
    if (missingNan.any().item<bool>()) {
      std::string where = firstMismatch(missingNan, count);
      diff.problem = label + " is not NaN where the reference is, in " +
                     of(count) + " (first at " + where + ")";
      return diff;
    }
    at::Tensor wInf = w.isinf();
    at::Tensor badInf = g.isinf().logical_and(wInf.logical_not());
    badInf = badInf.logical_or(wInf.logical_and(g.ne(w)));
    if (badInf.any().item<bool>()) {
      std::string where = firstMismatch(badInf, count);
      diff.problem = label + " disagrees with the reference's infinities in " +
                     of(count) + " (first at " + where + ")";
      return diff;
    }
    at::Tensor finite = w.isfinite();
    at::Tensor error = (g - w).abs().masked_fill(finite.logical_not(), 0);
    at::Tensor scale = w.abs().masked_fill(finite.logical_not(), 1);
    diff.maxAbs = error.max().item<double>();
    diff.maxRel =
        (error / scale.clamp_min(std::max(tol.atol, 1e-30))).max().item<double>();
    at::Tensor bad = error.gt(scale * tol.rtol + tol.atol);
    if (bad.any().item<bool>()) {
      std::string where = firstMismatch(bad, count);
      diff.problem = label + " differs from the reference beyond atol " +
                     number(tol.atol) + " + rtol " + number(tol.rtol) +
                     " * |reference| in " + of(count) + " (first at " + where +
                     "; max abs error " + number(diff.maxAbs) + ")";
    }
    return diff;
  }
  at::Tensor error = (g - w).abs();
  diff.maxAbs = error.max().item<double>();
  diff.maxRel = (error / w.abs().clamp_min(1)).max().item<double>();
  at::Tensor bad = got.ne(want);
  if (bad.any().item<bool>()) {
    std::string where = firstMismatch(bad, count);
    diff.problem = label + " differs from the reference in " + of(count) +
                   " (first at " + where + "); " +
                   dtypeString(want.scalar_type()) + " must match exactly";
  }
  return diff;
}

/// Fills freshly allocated memory of the results' sizes with a poison and
/// frees it: the caching allocator hands those blocks to the candidate's
/// next allocations, so elements it never writes show up. `which` picks
/// NaN (0) or a large finite value (1).
void poisonAllocator(const ReferenceProgram &program, int which,
                     c10::Device device) {
  std::vector<at::Tensor> blocks;
  for (int id : program.outputs) {
    const TensorType &type = program.typeOf(id);
    if (type.numElements() == 0)
      continue;
    at::Tensor block =
        at::empty(type.shape, at::TensorOptions()
                                  .dtype(toScalarType(type.dtype))
                                  .device(device));
    if (type.dtype == DType::Bool)
      block.fill_(which == 0);
    else if (type.dtype == DType::Float16)
      block.fill_(which == 0 ? NAN : 30000.0);
    else if (isFloatingPoint(type.dtype))
      block.fill_(which == 0 ? NAN : 1e30);
    else
      block.reshape({-1}).view(at::kByte).fill_(which == 0 ? 0x5A : 0xA5);
    blocks.push_back(std::move(block));
  }
}

} // namespace dynamic_check
} // namespace dice
