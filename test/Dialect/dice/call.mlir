// dice.call is Pure and a CallOpInterface: generic passes may merge, erase
// and reason about it without knowing the dialect.
// RUN: dice-opt %s -split-input-file -cse | FileCheck %s --check-prefix=CSE
// RUN: dice-opt %s -split-input-file -canonicalize | FileCheck %s --check-prefix=CANON
// RUN: dice-opt %s -split-input-file -symbol-dce | FileCheck %s --check-prefix=DCE

dice.kernel @k_0123456789abcdef : (tensor<4xf32>) -> tensor<4xf32>
    verdict #dice.verdict<accepted, kernel_ms = 0.01, baseline_ms = 0.02, speedup = 2.0>
    source "__global__ void relu(float *x) {}" {sym_visibility = "private"}

// Two calls with the same operands compute the same tensor.
// CSE-LABEL: func.func @same_operands
// CSE-SAME: (%[[X:.*]]: tensor<4xf32>)
// CSE: %[[C:.*]] = dice.call @k_0123456789abcdef(%[[X]])
// CSE-NOT: dice.call
// CSE: return %[[C]], %[[C]]
func.func @same_operands(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = dice.call @k_0123456789abcdef(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = dice.call @k_0123456789abcdef(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// A call nobody reads has no effect to keep.
// CANON-LABEL: func.func @unused
// CANON-NOT: dice.call
// CANON: return
func.func @unused(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = dice.call @k_0123456789abcdef(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %x : tensor<4xf32>
}

// The call is a use of its kernel: symbol-dce keeps a private kernel that
// is called...
// DCE: dice.kernel @k_0123456789abcdef
// DCE-LABEL: func.func @called
// DCE: dice.call @k_0123456789abcdef
func.func @called(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = dice.call @k_0123456789abcdef(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

// ...and erases one that is not.
// DCE-NOT: dice.kernel
// DCE-LABEL: func.func @not_called
dice.kernel @k_aaaaaaaaaaaaaaaa : (tensor<4xf32>) -> tensor<4xf32>
    verdict #dice.verdict<accepted, kernel_ms = 0.01, baseline_ms = 0.02, speedup = 2.0>
    source "__global__ void relu(float *x) {}" {sym_visibility = "private"}

func.func @not_called(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
