// RUN: dice-opt %s -split-input-file -verify-diagnostics --dice-outline=granularity=fusion | FileCheck %s

// Ops the reference program cannot render stay outside requests, each with
// a remark saying why; the rest is outlined around them.

#id = affine_map<(d0, d1) -> (d0, d1)>

// A dynamic size that no operand has (the loop's extent is a function
// argument) cannot be a size symbol of the request.
// CHECK-LABEL: func.func @dynamic_shape
// CHECK-NOT: dice.kernel_request
func.func @dynamic_shape(%n: index) -> tensor<?x4xf32> {
  %e = tensor.empty(%n) : tensor<?x4xf32>
  // expected-remark @+1 {{stays outside kernel requests: 'tensor.empty' result: dynamic dimension 0 of tensor<?x4xf32> is a size none of the inputs has}}
  %r = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<?x4xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 1 : index
    %c = arith.index_cast %i : index to i64
    %y = arith.sitofp %c : i64 to f32
    linalg.yield %y : f32
  } -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// The payload that reads its loop index as an unsigned 64-bit value is left
// out; the exp that reads it is outlined.
// CHECK-LABEL: func.func @index_payload
// CHECK: %[[IOTA:.*]] = linalg.generic
// CHECK: dice.kernel_request "{{[0-9a-f]+}}" level(1) (%[[IOTA]])
// CHECK:   math.exp
func.func @index_payload() -> tensor<2x3xf32> {
  %e = tensor.empty() : tensor<2x3xf32>
  // expected-remark @+1 {{stays outside kernel requests: 'linalg.generic' has a payload op 'arith.uitofp' that reads an unsigned 64-bit value, which no wider torch dtype holds}}
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

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d0)>

// A reduction whose combiner has no torch reduction stays outside.
// CHECK-LABEL: func.func @xor_reduction
// CHECK-NOT: dice.kernel_request
func.func @xor_reduction(%x: tensor<4x4xi32>) -> tensor<4xi32> {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<4xi32>
  %init = linalg.fill ins(%zero : i32) outs(%e : tensor<4xi32>) -> tensor<4xi32>
  // expected-remark @+1 {{stays outside kernel requests: 'linalg.generic' reduces with 'arith.xori', which has no torch reduction}}
  %r = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x4xi32>) outs(%init : tensor<4xi32>) {
  ^bb0(%a: i32, %acc: i32):
    %y = arith.xori %a, %acc : i32
    linalg.yield %y : i32
  } -> tensor<4xi32>
  return %r : tensor<4xi32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// An op of a dialect dice-opt does not know (torch-mlir's tm_tensor, in
// generic form), other than the scans, scatters and sorts the reference
// builder reads, stays outside; the elementwise op after it is a request
// that takes its result.
// CHECK-LABEL: func.func @unknown_dialect
// CHECK: "tm_tensor.topk"
// CHECK: dice.kernel_request
func.func @unknown_dialect(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %e = tensor.empty() : tensor<4x6xf32>
  // expected-remark @+1 {{stays outside kernel requests: 'tm_tensor.topk' is an op of dialect 'tm_tensor', which dice-opt does not know}}
  %s = "tm_tensor.topk"(%x) <{dimension = 1 : i64}> ({
  ^bb0(%a: f32, %b: f32):
    %t = arith.cmpf olt, %a, %b : f32
    "tm_tensor.yield"(%t) : (i1) -> ()
  }) : (tensor<4x6xf32>) -> tensor<4x6xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<4x6xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %y = math.tanh %a : f32
    linalg.yield %y : f32
  } -> tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A scan the reference program cannot render (an exclusive one: no torch
// function computes it) stays outside, saying why.
// CHECK-LABEL: func.func @exclusive_scan
// CHECK: "tm_tensor.scan"
// CHECK: dice.kernel_request
func.func @exclusive_scan(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x6xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %e1 = tensor.empty() : tensor<4xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  // expected-remark @+1 {{stays outside kernel requests: 'tm_tensor.scan' is an exclusive scan, which no torch function computes}}
  %s:2 = "tm_tensor.scan"(%x, %f, %f1) <{dimension = 1 : i64, inclusive = false, operandSegmentSizes = array<i32: 1, 2>}> ({
  ^bb0(%a: f32, %b: f32):
    %t = arith.addf %a, %b : f32
    "tm_tensor.yield"(%t) : (f32) -> ()
  }) : (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4xf32>) -> (tensor<4x6xf32>, tensor<4xf32>)
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s#0 : tensor<4x6xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %y = math.tanh %a : f32
    linalg.yield %y : f32
  } -> tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}
