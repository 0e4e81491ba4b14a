// RUN: rm -rf %t && mkdir -p %t/art
// RUN: cd %S && dice-opt %s -split-input-file -verify-diagnostics --dice-lower=artifacts=%t/art
// A failed lowering writes no manifest.
// RUN: not test -e %t/art/manifest.json

// A called kernel whose library is not on disk.
// expected-error @+1 {{'dice.kernel' op artifact 'Inputs/lower/absent.so' does not exist or is not a file}}
dice.kernel @k_0badc0de0badc0de : (tensor<4xf32>) -> tensor<4xf32>
    verdict #dice.verdict<accepted, kernel_ms = 0.5, baseline_ms = 1.0, speedup = 2.0>
    source "__global__ void k() {}"
    artifact "Inputs/lower/absent.so"
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = dice.call @k_0badc0de0badc0de(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A called kernel that was never built.
// expected-error @+1 {{'dice.kernel' op is called but has no artifact; dice-lower needs the built kernel library}}
dice.kernel @k_0badc0de0badc0de : (tensor<4xf32>) -> tensor<4xf32>
    verdict #dice.verdict<accepted, kernel_ms = 0.5, baseline_ms = 1.0, speedup = 2.0>
    source "__global__ void k() {}"
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = dice.call @k_0badc0de0badc0de(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// An element type the runtime has no DiceDType for.
// expected-error @+1 {{'dice.kernel' op input #0 has element type 'complex<f32>', which the DICE runtime cannot pass}}
dice.kernel @k_0badc0de0badc0de : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
    verdict #dice.verdict<accepted, kernel_ms = 0.5, baseline_ms = 1.0, speedup = 2.0>
    source "__global__ void k() {}"
    artifact "Inputs/lower/pair.so"
func.func @f(%x: tensor<4xcomplex<f32>>) -> tensor<4xf32> {
  %r = dice.call @k_0badc0de0badc0de(%x) : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// The symbol of the declaration is taken by something else.
// expected-error @+1 {{'dice.kernel' op cannot be lowered: the symbol '@dice_k_3f9a0c1d2e4b5a69' is already defined differently}}
dice.kernel @k_3f9a0c1d2e4b5a69 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    verdict #dice.verdict<accepted, kernel_ms = 0.1, baseline_ms = 0.24, speedup = 2.4>
    source "__global__ void k() {}"
    artifact "Inputs/lower/k_3f9a0c1d2e4b5a69.so"
// expected-note @+1 {{defined here}}
func.func private @dice_k_3f9a0c1d2e4b5a69(tensor<4xf32>) -> tensor<4xf32>
func.func @f(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %r = dice.call @k_3f9a0c1d2e4b5a69(%x, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
