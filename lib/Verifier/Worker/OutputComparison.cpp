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
#include <limits>

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

ReferenceProgram inFloat64(const ReferenceProgram &program) {
  ReferenceProgram wide = program;
  auto widen = [](TensorType &type) {
    if (isFloatingPoint(type.dtype))
      type.dtype = DType::Float64;
  };
  for (TensorType &input : wide.inputs)
    widen(input);
  for (RefOp &op : wide.ops)
    widen(op.type);
  return wide;
}

std::vector<at::Tensor> inFloat64(const std::vector<at::Tensor> &inputs) {
  std::vector<at::Tensor> wide;
  for (const at::Tensor &input : inputs)
    wide.push_back(at::isFloatingType(input.scalar_type())
                       ? input.to(at::kDouble)
                       : input);
  return wide;
}

/// The tolerance of one result's comparison.
///
/// A fixed absolute tolerance is meaningless across scales: against results
/// near 1e-6, atol 1e-4 accepts zeros. So atol is relative to the
/// reference's root mean square. Heavy-tailed inputs reach magnitudes where
/// fp32 rounding of a long sum exceeds that whatever the summation order (a
/// 512-term dot product of values near 100 rounds at about 1e-3), so that
/// trial's atol scales with the largest finite magnitude instead.
///
/// Where the reference itself cancels (a sum that is zero but for rounding,
/// a chain rounded to bfloat16 after every op), an exact kernel differs from
/// it by the reference's own error. That error is measured, against the
/// program run in float64, and both limits grow by 4x it: twice for the
/// reference's error and the kernel's, twice again for margin.
Tolerance trialTolerance(const at::Tensor &reference, const at::Tensor *precise,
                         Distribution distribution,
                         const DynamicCheckRequest &request) {
  Tolerance tol = toleranceOf(reference.scalar_type(), request);
  if (!at::isFloatingType(reference.scalar_type()))
    return tol; // integers and bools: exact
  if (request.comparison == Comparison::KernelBench) {
    double t = request.kernelbenchTolerance;
    return {t, t, 0, 0, /*allclose=*/true};
  }
  if (reference.numel() == 0)
    return tol;
  at::Tensor w = reference.detach().to(at::kDouble);
  at::Tensor finite = w.isfinite();
  at::Tensor magnitudes = w.abs().masked_fill(finite.logical_not(), 0);
  double largest = magnitudes.max().item<double>();
  if (!precise) {
    // No measure of the reference's own error: the fixed tolerance, which
    // never shrinks, and no norm limit.
    if (distribution == Distribution::HeavyTailed)
      tol.atol *= std::max(1.0, largest);
    return tol;
  }
  int64_t count = finite.sum().item<int64_t>();
  double rms = count ? std::sqrt(magnitudes.square().sum().item<double>() /
                                 double(count))
                     : 0;
  double scale = distribution == Distribution::HeavyTailed ? std::max(1.0, largest)
                 : rms > 0                                 ? rms
                                                           : 1.0;
  at::Tensor p = precise->detach().to(at::kDouble);
  at::Tensor own =
      (w - p).abs().masked_fill(finite.logical_and(p.isfinite()).logical_not(), 0);
  tol.atol = tol.atol * scale + 4 * own.max().item<double>();
  tol.normTol = tol.rtol;
  tol.normSlack = 4 * own.norm().item<double>();
  return tol;
}

bool referenceChanged(const at::Tensor &before, const at::Tensor &after,
                      at::ScalarType dtype) {
  if (before.sizes() != after.sizes())
    return true;
  if (!at::isFloatingType(dtype))
    return !at::equal(before, after);
  at::Tensor a = before.detach().to(at::kDouble), b = after.detach().to(at::kDouble);
  at::Tensor finite = a.isfinite().logical_and(b.isfinite());
  if (!at::equal(a.isfinite(), b.isfinite()))
    return true;
  double change = (a - b).masked_fill(finite.logical_not(), 0).norm().item<double>();
  double size = b.masked_fill(finite.logical_not(), 0).norm().item<double>();
  double ulp = std::numeric_limits<float>::epsilon();
  if (dtype == at::kHalf)
    ulp = 1.0 / 1024;
  else if (dtype == at::kBFloat16)
    ulp = 1.0 / 128;
  else if (dtype == at::kDouble)
    ulp = std::numeric_limits<double>::epsilon();
  return change > 4 * ulp * size;
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
  if (tol.allclose && at::isFloatingType(want.scalar_type())) {
    at::Tensor error = (g - w).abs();
    diff.maxAbs = error.nan_to_num(0).max().item<double>();
    diff.maxRel = (error / w.abs().clamp_min(std::max(tol.atol, 1e-30)))
                      .nan_to_num(0)
                      .max()
                      .item<double>();
    at::Tensor bad = at::isclose(g, w, tol.rtol, tol.atol).logical_not();
    if (bad.any().item<bool>()) {
      std::string where = firstMismatch(bad, count);
      diff.problem = label + " is not allclose to the reference (atol = rtol = " +
                     number(tol.atol) + ") in " + of(count) + " (first at " +
                     where + ")";
    }
    return diff;
  }
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
    double wantNorm = w.masked_fill(finite.logical_not(), 0).norm().item<double>();
    double errorNorm = error.norm().item<double>();
    diff.normErr = wantNorm > 0 ? errorNorm / wantNorm : 0;
    at::Tensor bad = error.gt(scale * tol.rtol + tol.atol);
    if (bad.any().item<bool>()) {
      std::string where = firstMismatch(bad, count);
      diff.problem = label + " differs from the reference beyond atol " +
                     number(tol.atol) + " + rtol " + number(tol.rtol) +
                     " * |reference| in " + of(count) + " (first at " + where +
                     "; max abs error " + number(diff.maxAbs) + ")";
    } else if (tol.normTol > 0 && wantNorm > 0 &&
               errorNorm > tol.normTol * wantNorm + tol.normSlack) {
      diff.problem = label + " is off by " + number(diff.normErr) +
                     " of the reference's norm (||got - ref|| / ||ref||; the "
                     "limit is " +
                     number(tol.normTol) +
                     (tol.normSlack > 0 ? " plus the reference's own error"
                                        : "") +
                     ")";
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
