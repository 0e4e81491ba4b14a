// RUN: dice-opt %s --dice-outline=granularity=function | FileCheck %s
// RUN: dice-opt %s --dice-outline=granularity=function \
// RUN:   | grep -o 'dice.kernel_request "[0-9a-f]*"' | sort | uniq -c | sort -n \
// RUN:   | FileCheck %s --check-prefix=DISTINCT

// The fingerprint names what a request computes (its reference program, a
// function of the request's operands), not how its MLIR is written:
// @spelled_one_way, @spelled_another and @operands_swapped share it;
// @another_constant and @another_op compute something else.
//
// DISTINCT:      1 dice.kernel_request
// DISTINCT-NEXT: 1 dice.kernel_request
// DISTINCT-NEXT: 3 dice.kernel_request
// DISTINCT-NOT:  dice.kernel_request

#id = affine_map<(d0, d1) -> (d0, d1)>
#ij = affine_map<(i, j) -> (i, j)>

// exp(x) + tanh(y) * 2
// CHECK-LABEL: func.func @spelled_one_way
// CHECK: dice.kernel_request "[[FP:[0-9a-f]+]]" level(3)
func.func @spelled_one_way(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %empty = tensor.empty() : tensor<4x8xf32>
  %ex = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%empty : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %th = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<4x8xf32>) outs(%empty : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.tanh %a : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %two = arith.constant 2.0 : f32
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%ex, %th : tensor<4x8xf32>, tensor<4x8xf32>) outs(%empty : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %b, %two : f32
    %s = arith.addf %a, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %sum : tensor<4x8xf32>
}

// The same with other SSA and map names, tanh before exp, the constant in
// hex, discardable attributes on the generics and a copy of the input.
// CHECK-LABEL: func.func @spelled_another
// CHECK: dice.kernel_request "[[FP]]" level(3)
func.func @spelled_another(%in0: tensor<4x8xf32>, %in1: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c2 = arith.constant 0x40000000 : f32
  %init = tensor.empty() : tensor<4x8xf32>
  %t = linalg.generic {indexing_maps = [#ij, #ij], iterator_types = ["parallel", "parallel"], doc = "tanh of the second input"} ins(%in1 : tensor<4x8xf32>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%v: f32, %unused: f32):
    %w = math.tanh %v : f32
    linalg.yield %w : f32
  } -> tensor<4x8xf32>
  %copy = linalg.copy ins(%in0 : tensor<4x8xf32>) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e = linalg.generic {indexing_maps = [#ij, #ij], iterator_types = ["parallel", "parallel"], library_call = "exp_f32"} ins(%copy : tensor<4x8xf32>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%v: f32, %unused: f32):
    %w = math.exp %v : f32
    linalg.yield %w : f32
  } -> tensor<4x8xf32>
  %out = linalg.generic {indexing_maps = [#ij, #ij, #ij], iterator_types = ["parallel", "parallel"]} ins(%e, %t : tensor<4x8xf32>, tensor<4x8xf32>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%p: f32, %q: f32, %unused: f32):
    %scaled = arith.mulf %q, %c2 : f32
    %total = arith.addf %p, %scaled : f32
    linalg.yield %total : f32
  } -> tensor<4x8xf32>
  return %out : tensor<4x8xf32>
}

// exp(x) + tanh(y) * 3
// CHECK-LABEL: func.func @another_constant
// CHECK: dice.kernel_request "{{[0-9a-f]+}}" level(3)
func.func @another_constant(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %empty = tensor.empty() : tensor<4x8xf32>
  %ex = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%empty : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %th = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<4x8xf32>) outs(%empty : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.tanh %a : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %three = arith.constant 3.0 : f32
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%ex, %th : tensor<4x8xf32>, tensor<4x8xf32>) outs(%empty : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %b, %three : f32
    %s = arith.addf %a, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %sum : tensor<4x8xf32>
}

// exp(y) + tanh(x) * 2: the same request on the function's arguments the
// other way round (one kernel serves both, called with its operands swapped).
// CHECK-LABEL: func.func @operands_swapped
// CHECK: dice.kernel_request "[[FP]]" level(3) (%arg1, %arg0)
func.func @operands_swapped(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %empty = tensor.empty() : tensor<4x8xf32>
  %ex = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<4x8xf32>) outs(%empty : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %th = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%empty : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.tanh %a : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %two = arith.constant 2.0 : f32
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%ex, %th : tensor<4x8xf32>, tensor<4x8xf32>) outs(%empty : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %b, %two : f32
    %s = arith.addf %a, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %sum : tensor<4x8xf32>
}

// exp(x) - tanh(y) * 2
// CHECK-LABEL: func.func @another_op
// CHECK: dice.kernel_request "{{[0-9a-f]+}}" level(3)
func.func @another_op(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %empty = tensor.empty() : tensor<4x8xf32>
  %ex = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%empty : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %th = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<4x8xf32>) outs(%empty : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.tanh %a : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %two = arith.constant 2.0 : f32
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%ex, %th : tensor<4x8xf32>, tensor<4x8xf32>) outs(%empty : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %b, %two : f32
    %s = arith.subf %a, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %sum : tensor<4x8xf32>
}
