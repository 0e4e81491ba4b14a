// RUN: dice-opt %s --dice-outline=granularity=fusion --dice-scaffold | dice-plan | FileCheck %s

// A plan's arguments: a dynamic dimension is a size symbol of the plan (the
// argument's example shape gives its example), equal sizes share one, and a
// scalar argument (a Python number torch-mlir kept) is a 0-d tensor.

// CHECK: "arguments":[{"dtype":"float32","shape":["s0",8]},{"dtype":"float32","shape":["s0",8]},{"dtype":"float64","shape":[]}]
// CHECK-SAME: "symbols":[{"example":3}]

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @scaled(%x: tensor<?x8xf32> {dice.example_shape = array<i64: 3, 8>},
                  %y: tensor<?x8xf32>, %alpha: f64) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%n) : tensor<?x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<?x8xf32>, tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}
