// RUN: dice-opt %s --dice-outline=granularity=fusion --dice-scaffold | not dice-plan 2>&1 | FileCheck %s --check-prefix=PLAN
// RUN: dice-opt %s --dice-outline=granularity=fusion --dice-scaffold | dice-plan --requests | FileCheck %s
// RUN: dice-opt %s --dice-outline=granularity=fusion | not dice-plan --requests 2>&1 | FileCheck %s --check-prefix=UNSCAFFOLDED

// A function that does not plan as a whole (an exclusive scan between two
// requests, which no torch function computes) still has its requests:
// `dice-plan --requests` writes them, in order, with their scaffolds and
// without value numbers.

// PLAN: 'tm_tensor.scan' is an exclusive scan, which no torch function computes

// CHECK: "function":"around"
// CHECK-SAME: "steps":[{
// CHECK-SAME: "fn":"exp"
// CHECK-SAME: "request":"
// CHECK-SAME: "signature":"torch::Tensor dice_forward(torch::Tensor x0);"
// CHECK-SAME: },{
// CHECK-SAME: "fn":"tanh"
// CHECK-SAME: "request":"
// CHECK-SAME: }]}
// CHECK-NOT: "args"

// UNSCAFFOLDED: error: dice-plan: a request without a scaffold; run dice-scaffold first

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @around(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4x6xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x6xf32>) outs(%e0 : tensor<4x6xf32>) {
  ^bb0(%p: f32, %o: f32):
    %v = math.exp %p : f32
    linalg.yield %v : f32
  } -> tensor<4x6xf32>
  %e = tensor.empty() : tensor<4x6xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %e1 = tensor.empty() : tensor<4xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %s:2 = "tm_tensor.scan"(%a, %f, %f1) <{dimension = 1 : i64, inclusive = false, operandSegmentSizes = array<i32: 1, 2>}> ({
  ^bb0(%l: f32, %r: f32):
    %t = arith.addf %l, %r : f32
    "tm_tensor.yield"(%t) : (f32) -> ()
  }) : (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4xf32>) -> (tensor<4x6xf32>, tensor<4xf32>)
  %e2 = tensor.empty() : tensor<4x6xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%s#0 : tensor<4x6xf32>) outs(%e2 : tensor<4x6xf32>) {
  ^bb0(%p: f32, %o: f32):
    %v = math.tanh %p : f32
    linalg.yield %v : f32
  } -> tensor<4x6xf32>
  return %b : tensor<4x6xf32>
}
