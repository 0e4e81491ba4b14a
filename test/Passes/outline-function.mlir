// RUN: dice-opt %s -verify-diagnostics --dice-outline=granularity=function | FileCheck %s

// At function granularity the request is the whole body or nothing: an op
// the renderer cannot express keeps the function out, with remarks naming
// the op and the consequence.

#id = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-LABEL: func.func @index_payload
// CHECK-NOT: dice.kernel_request
func.func @index_payload() -> tensor<2x3xf32> {
  %e = tensor.empty() : tensor<2x3xf32>
  // expected-remark @+2 {{stays outside kernel requests: 'linalg.generic' has a payload op 'arith.uitofp' that reads an unsigned 64-bit value, which no wider torch dtype holds}}
  // expected-remark @+1 {{the function stays outside a whole-function request: this op cannot be part of it}}
  %iota = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<2x3xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 1 : index
    %c = arith.index_cast %i : index to i64
    %f = arith.uitofp %c : i64 to f32
    linalg.yield %f : f32
  } -> tensor<2x3xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%iota : tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %y = math.exp %a : f32
    linalg.yield %y : f32
  } -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}
