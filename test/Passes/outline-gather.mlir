// RUN: dice-opt %s --dice-outline=granularity=fusion --dice-scaffold | FileCheck %s

// A gather reads %a inside its payload (a captured value): a use that the
// fusion's cycle check follows. With gathers rendered, the exp, the gather
// and the add that reads both form one request; never two requests that
// depend on each other, and never a cycle error.

#id = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-LABEL: func.func @gather_after_producer
// CHECK: dice.kernel_request {{.*}} level(2) (%arg0, %arg1)
// CHECK-SAME: t2 = torch.exp(x0)\0A
// CHECK-SAME: t5 = t2[t3, t4]\0A        t6 = torch.add(t2, t5)\0A
// CHECK: math.exp
// CHECK: tensor.extract
// CHECK: arith.addf
// CHECK-NOT: dice.kernel_request
func.func @gather_after_producer(%x: tensor<4x3xf32>, %idx: tensor<4xi64>) -> tensor<4x3xf32> {
  %e = tensor.empty() : tensor<4x3xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%p: f32, %o: f32):
    %y = math.exp %p : f32
    linalg.yield %y : f32
  } -> tensor<4x3xf32>
  %c = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, #id], iterator_types = ["parallel", "parallel"]} ins(%idx : tensor<4xi64>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%i: i64, %o: f32):
    %ii = arith.index_cast %i : i64 to index
    %j = linalg.index 1 : index
    %v = tensor.extract %a[%ii, %j] : tensor<4x3xf32>
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  %d = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %c : tensor<4x3xf32>, tensor<4x3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  return %d : tensor<4x3xf32>
}

// The gather's source is read only inside the gather's payload: it is not a
// result of the request (the request returns the gather alone).
// CHECK-LABEL: func.func @gather_of_producer
// CHECK: %[[R:[^ ]+]] = dice.kernel_request {{.*}} -> tensor<4x3xf32> scaffold
// CHECK-SAME: t5 = t2[t3, t4]\0A        return t5\0A
// CHECK: return {{.*}}%[[R]] : tensor<4x3xf32>
func.func @gather_of_producer(%x: tensor<4x3xf32>, %idx: tensor<4xi64>) -> tensor<4x3xf32> {
  %e = tensor.empty() : tensor<4x3xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%p: f32, %o: f32):
    %y = math.exp %p : f32
    linalg.yield %y : f32
  } -> tensor<4x3xf32>
  %c = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, #id], iterator_types = ["parallel", "parallel"]} ins(%idx : tensor<4xi64>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%i: i64, %o: f32):
    %ii = arith.index_cast %i : i64 to index
    %j = linalg.index 1 : index
    %v = tensor.extract %a[%ii, %j] : tensor<4x3xf32>
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  return %c : tensor<4x3xf32>
}
