// Where some requests of a function get kernels and others fall back,
// dice-resolve puts every op back at its original position, a kernel call
// at its request's first op, and then only as far down as its operands
// need: here the fused exp + add reads the negated weight, which
// dice-outline moved above the request; the dot product after it (a
// contraction starts a request of its own) falls back. No position
// attribute is left.

// RUN: rm -rf %t && mkdir -p %t && cd %t
// RUN: dice-db import %t/kernels.db %S/Inputs/resolve-order-seed.jsonl
// RUN: dice-opt %s --dice-db=%t/kernels.db --dice-outline=granularity=fusion \
// RUN:   --dice-scaffold --dice-infill=engine=replay:%S/Inputs/empty-replay.jsonl \
// RUN:   --dice-resolve -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s

// CHECK: remark: using kernel @k_fd0b2be834fa4113
// CHECK: remark: falling back to the original ops: all candidates incorrect (1)
// CHECK-NOT: dice.position
// CHECK-LABEL: func.func @mixed
// CHECK-NEXT: %[[E:.*]] = tensor.empty() : tensor<8xf32>
// CHECK-NEXT: %[[C:.*]] = arith.constant dense<
// CHECK-NEXT: %[[N:.*]] = linalg.negf ins(%[[C]] : tensor<8xf32>) outs(%[[E]] : tensor<8xf32>)
// CHECK-NEXT: %[[B:.*]] = dice.call @k_fd0b2be834fa4113(%{{.*}}, %[[N]])
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0.0
// CHECK-NEXT: %[[E1:.*]] = tensor.empty() : tensor<f32>
// CHECK-NEXT: %[[F:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E1]] : tensor<f32>)
// CHECK-NEXT: %[[S:.*]] = linalg.dot ins(%[[B]], %[[B]] : tensor<8xf32>, tensor<8xf32>) outs(%[[F]] : tensor<f32>)
// CHECK: return %[[S]]
// CHECK-NOT: dice.position

#id = affine_map<(d0) -> (d0)>
func.func @mixed(%x: tensor<8xf32>) -> tensor<f32> {
  %e = tensor.empty() : tensor<8xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%i: f32, %o: f32):
    %v = math.exp %i : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  %c = arith.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %n = linalg.negf ins(%c : tensor<8xf32>) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %b = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%a, %n : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %v = arith.addf %i, %j : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e1 : tensor<f32>) -> tensor<f32>
  %s = linalg.dot ins(%b, %b : tensor<8xf32>, tensor<8xf32>) outs(%f : tensor<f32>) -> tensor<f32>
  return %s : tensor<f32>
}
