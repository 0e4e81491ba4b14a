// dice-resolve on requests written by hand (no `dice.position`): a request
// that falls back returns its ops to where it stood; a cloned constant equal
// to one before the request is merged into it, and one with no equal moves to
// the start of the function, where torch-mlir puts constants.

// RUN: dice-opt %s --dice-resolve -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s

// CHECK: remark: falling back to the original ops: no candidates
// CHECK-LABEL: func.func @by_hand
// CHECK-NEXT: %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[E:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT: %[[R:.*]] = linalg.generic
// CHECK: arith.addf %{{.*}}, %[[ONE]]
// CHECK: arith.mulf %{{.*}}, %[[TWO]]
// CHECK-NOT: arith.constant
// CHECK: return %[[R]]
func.func @by_hand(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = arith.constant 1.0 : f32
  %r = dice.kernel_request "0123456789abcdef" level(1) (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %c1 = arith.constant 1.0 : f32
    %c2 = arith.constant 2.0 : f32
    %e = tensor.empty() : tensor<4xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%v: f32, %o: f32):
      %s = arith.addf %v, %c1 : f32
      %m = arith.mulf %s, %c2 : f32
      linalg.yield %m : f32
    } -> tensor<4xf32>
    dice.yield %y : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
