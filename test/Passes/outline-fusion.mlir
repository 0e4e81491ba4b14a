// RUN: dice-opt %s -split-input-file -verify-diagnostics --dice-outline=granularity=fusion | FileCheck %s

// The fusion policy (docs/passes.md, "Fusion policy").

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// Softmax as torch-mlir writes it: max over the rows, subtract and exp, sum
// over the same rows, divide. Two reductions over the same rows and the
// elementwise ops around them: one request.

// CHECK-LABEL: func.func @softmax
// CHECK: %[[R:.*]] = dice.kernel_request "{{[0-9a-f]+}}" level(2) (%{{.*}}) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK:   arith.maximumf
// CHECK:   math.exp
// CHECK:   arith.addf
// CHECK:   arith.divf
// CHECK:   dice.yield
// CHECK-NEXT: }
// CHECK-NOT: dice.kernel_request
// CHECK: return {{{.*}}} %[[R]]
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %re = tensor.empty() : tensor<4xf32>
  %minit = linalg.fill ins(%ninf : f32) outs(%re : tensor<4xf32>) -> tensor<4xf32>
  %max = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xf32>) outs(%minit : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.maximumf %a, %acc : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %exp = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %max : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %y = math.exp %d : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %sinit = linalg.fill ins(%zero : f32) outs(%re : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%exp : tensor<4x8xf32>) outs(%sinit : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %div = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%exp, %sum : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %y = arith.divf %a, %s : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  return %div : tensor<4x8xf32>
}

// -----

// The transpose of an activation goes into the matmul that reads it; one
// compute op with a rearranged operand is still a single-op task.

// CHECK-LABEL: func.func @transposed_operand
// CHECK-NOT: linalg.transpose
// CHECK: %[[R:.*]] = dice.kernel_request "{{[0-9a-f]+}}" level(1) (%{{.*}}, %{{.*}}) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
// CHECK:   linalg.transpose
// CHECK:   linalg.matmul
// CHECK:   dice.yield
// CHECK-NEXT: }
// CHECK-NEXT: return {{{.*}}} %[[R]]
func.func @transposed_operand(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x2xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x2xf32>
  %t = linalg.transpose ins(%y : tensor<2x3xf32>) outs(%e : tensor<3x2xf32>) permutation = [1, 0]
  %o = tensor.empty() : tensor<2x2xf32>
  %init = linalg.fill ins(%zero : f32) outs(%o : tensor<2x2xf32>) -> tensor<2x2xf32>
  %mm = linalg.matmul ins(%x, %t : tensor<2x3xf32>, tensor<3x2xf32>) outs(%init : tensor<2x2xf32>) -> tensor<2x2xf32>
  return %mm : tensor<2x2xf32>
}

// -----

// Data movement that two requests read is copied into each: the requests
// read the tensor it rearranges, and nothing is left outside.

// CHECK-LABEL: func.func @transpose_read_twice
// CHECK-NOT: linalg.transpose
// CHECK: dice.kernel_request "{{[0-9a-f]+}}" level(1) (%{{.*}}, %{{.*}})
// CHECK:   linalg.transpose
// CHECK:   linalg.matmul
// CHECK: dice.kernel_request "{{[0-9a-f]+}}" level(1) (%{{.*}}, %{{.*}})
// CHECK:   linalg.transpose
// CHECK:   linalg.matmul
// CHECK-NOT: linalg.transpose
// CHECK: return
func.func @transpose_read_twice(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> (tensor<2x2xf32>, tensor<3x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x2xf32>
  %t = linalg.transpose ins(%y : tensor<2x3xf32>) outs(%e : tensor<3x2xf32>) permutation = [1, 0]
  %o = tensor.empty() : tensor<2x2xf32>
  %init = linalg.fill ins(%zero : f32) outs(%o : tensor<2x2xf32>) -> tensor<2x2xf32>
  %mm = linalg.matmul ins(%x, %t : tensor<2x3xf32>, tensor<3x2xf32>) outs(%init : tensor<2x2xf32>) -> tensor<2x2xf32>
  %o2 = tensor.empty() : tensor<3x3xf32>
  %init2 = linalg.fill ins(%zero : f32) outs(%o2 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %mm2 = linalg.matmul ins(%t, %x : tensor<3x2xf32>, tensor<2x3xf32>) outs(%init2 : tensor<3x3xf32>) -> tensor<3x3xf32>
  return %mm, %mm2 : tensor<2x2xf32>, tensor<3x3xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#vec = affine_map<(d0) -> (d0)>

// A merge the policy allows but that would make a cycle is not made. %k
// reads two reductions over the same rows, %s1 and %s2, but %s2 reads the
// matmul's group, which reads %s1: one request of %s1 and %s2 would read
// the matmul's request and be read by it. Three requests, in order.

// CHECK-LABEL: func.func @merge_would_cycle
// CHECK: %[[S1:.*]] = dice.kernel_request "{{[0-9a-f]+}}" level(1) (%{{.*}})
// CHECK:   iterator_types = ["parallel", "reduction"]
// CHECK:   dice.yield
// CHECK: %[[MM:.*]] = dice.kernel_request "{{[0-9a-f]+}}" level(2) (%{{.*}}, %{{.*}}, %[[S1]])
// CHECK:   linalg.matmul
// CHECK:   arith.mulf
// CHECK:   dice.yield
// CHECK: %[[K:.*]] = dice.kernel_request "{{[0-9a-f]+}}" level(2) (%[[MM]], %[[S1]])
// CHECK:   iterator_types = ["parallel", "reduction"]
// CHECK:   arith.subf
// CHECK:   dice.yield
// CHECK: return {{{.*}}} %[[K]]
func.func @merge_would_cycle(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4xf32> {
  %zero = arith.constant 0.0 : f32
  %re = tensor.empty() : tensor<4xf32>
  %rinit = linalg.fill ins(%zero : f32) outs(%re : tensor<4xf32>) -> tensor<4xf32>
  %s1 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x4xf32>) outs(%rinit : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e = tensor.empty() : tensor<4x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x4xf32>, tensor<4x4xf32>) outs(%init : tensor<4x4xf32>) -> tensor<4x4xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%mm, %s1 : tensor<4x4xf32>, tensor<4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<4x4xf32>
  %s2 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%scaled : tensor<4x4xf32>) outs(%rinit : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %k = linalg.generic {indexing_maps = [#vec, #vec, #vec], iterator_types = ["parallel"]} ins(%s2, %s1 : tensor<4xf32>, tensor<4xf32>) outs(%re : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  return %k : tensor<4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// An op left outside (its payload has no exact torch equivalent) that reads a
// reduction inside its payload, as torch-mlir's gathers do, between that
// reduction and an elementwise op reading both: joining the reduction's
// request would make that request read the op outside it that reads the
// request. The elementwise op forms its own request, without an error.

// CHECK-LABEL: func.func @outside_op_between
// CHECK: %[[S:.*]] = dice.kernel_request "{{[0-9a-f]+}}" level(1) (%{{.*}})
// CHECK:   iterator_types = ["parallel", "reduction"]
// CHECK:   dice.yield
// CHECK: %[[U:.*]] = linalg.generic
// CHECK:   tensor.extract %[[S]]
// CHECK: %[[R:.*]] = dice.kernel_request "{{[0-9a-f]+}}" level(1) (%{{.*}}, %[[S]], %[[U]])
// CHECK:   arith.mulf
// CHECK:   dice.yield
// CHECK: return {{{.*}}} %[[R]]
func.func @outside_op_between(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %re = tensor.empty() : tensor<4xf32>
  %rinit = linalg.fill ins(%zero : f32) outs(%re : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x4xf32>) outs(%rinit : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %e = tensor.empty() : tensor<4x4xf32>
  // expected-remark @+1 {{stays outside kernel requests}}
  %u = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<4x4xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 1 : index
    %y = tensor.extract %s[%i] : tensor<4xf32>
    // An unsigned 64-bit conversion: no torch dtype holds its input.
    %k = arith.index_cast %i : index to i64
    %w = arith.uitofp %k : i64 to f32
    %z = arith.addf %y, %w : f32
    linalg.yield %z : f32
  } -> tensor<4x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %s, %u : tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %q = arith.addf %p, %c : f32
    linalg.yield %q : f32
  } -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#rows3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>

// Layer norm: the mean and the variance reduce the same rows; a reshape of
// the input goes with the request that reads it.

// CHECK-LABEL: func.func @layer_norm
// CHECK-NOT: tensor.expand_shape
// CHECK: %[[R:.*]] = dice.kernel_request "{{[0-9a-f]+}}" level(2) (%{{.*}}) : (tensor<6x8xf32>) -> tensor<2x3x8xf32>
// CHECK:   tensor.expand_shape
// CHECK:   math.rsqrt
// CHECK:   dice.yield
// CHECK-NEXT: }
// CHECK-NEXT: return {{{.*}}} %[[R]]
func.func @layer_norm(%flat: tensor<6x8xf32>) -> tensor<2x3x8xf32> {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 8.0 : f32
  %x = tensor.expand_shape %flat [[0, 1], [2]] output_shape [2, 3, 8] : tensor<6x8xf32> into tensor<2x3x8xf32>
  %re = tensor.empty() : tensor<2x3x1xf32>
  %rinit = linalg.fill ins(%zero : f32) outs(%re : tensor<2x3x1xf32>) -> tensor<2x3x1xf32>
  %sum = linalg.generic {indexing_maps = [#id3, #rows3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<2x3x8xf32>) outs(%rinit : tensor<2x3x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<2x3x1xf32>
  %e = tensor.empty() : tensor<2x3x8xf32>
  %centered = linalg.generic {indexing_maps = [#id3, #rows3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %sum : tensor<2x3x8xf32>, tensor<2x3x1xf32>) outs(%e : tensor<2x3x8xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %m = arith.divf %s, %n : f32
    %d = arith.subf %a, %m : f32
    linalg.yield %d : f32
  } -> tensor<2x3x8xf32>
  %sq = linalg.generic {indexing_maps = [#id3, #rows3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%centered : tensor<2x3x8xf32>) outs(%rinit : tensor<2x3x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %p = arith.mulf %a, %a : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<2x3x1xf32>
  %y = linalg.generic {indexing_maps = [#id3, #rows3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%centered, %sq : tensor<2x3x8xf32>, tensor<2x3x1xf32>) outs(%e : tensor<2x3x8xf32>) {
  ^bb0(%a: f32, %v: f32, %o: f32):
    %var = arith.divf %v, %n : f32
    %r = math.rsqrt %var : f32
    %z = arith.mulf %a, %r : f32
    linalg.yield %z : f32
  } -> tensor<2x3x8xf32>
  return %y : tensor<2x3x8xf32>
}
