//===- RuntimeTestKernel.cpp - a kernel library the runtime test loads ----===//
//
// Shaped like a verifier-built kernel library (an op registered when the
// library is loaded), but for the CPU key so that it runs on any machine.
//
//===----------------------------------------------------------------------===//

#include <ATen/ATen.h>
#include <torch/library.h>

namespace {
at::Tensor square(const at::Tensor &x) { return x * x; }
} // namespace

TORCH_LIBRARY_FRAGMENT(dice, m) {
  m.def("k_runtimelibrary(Tensor x) -> Tensor");
}
TORCH_LIBRARY_IMPL(dice, CPU, m) {
  m.impl("k_runtimelibrary", TORCH_FN(square));
}

// A kernel under a fingerprint dice-lower accepts, with two results, one a
// transposed view: what test_lowered_plan.py runs through dice-reference-run.
namespace {
std::vector<at::Tensor> squareAndTranspose(const at::Tensor &x) {
  return {x * x, x.t()};
}
} // namespace

TORCH_LIBRARY_FRAGMENT(dice, m) {
  m.def("k_5a0a5e00000000aa(Tensor x) -> Tensor[]");
}
TORCH_LIBRARY_IMPL(dice, CPU, m) {
  m.impl("k_5a0a5e00000000aa", TORCH_FN(squareAndTranspose));
}
