// RUN: dice-opt %s -split-input-file --dice-outline=granularity=fusion --dice-scaffold | FileCheck %s

// Constants that JSON has no number for: torch-mlir writes -inf
// (0xFF800000) as a clamp's bound, max pooling's fill and a masked score;
// NaN and -0.0 come from user code. nlohmann-json would write each as
// `null`, which no reader takes back: the program carries them as strings
// ("-inf", "nan") and -0.0 as a number, and the request verifies (its
// program's input and result counts are the request's).

#map = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-LABEL: func.func @clamp_min_inf
// CHECK: dice.kernel_request "{{[0-9a-f]+}}" level(2) (%{{.*}}) : (tensor<4x8xf32>) -> tensor<4x8xf32> scaffold <
// CHECK-SAME: \22fn\22:\22scalar\22,\22type\22:{\22dtype\22:\22float32\22,\22shape\22:[]},\22value\22:\22-inf\22}
// CHECK-SAME: reference = "{{.*}}torch.ge(x0, float('-inf'))
// CHECK-NOT: null
func.func @clamp_min_inf(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %one = arith.constant 1.000000e+00 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %c = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %lt = arith.cmpf ult, %in, %ninf : f32
    %s = arith.select %lt, %ninf, %in : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%c : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %one : f32
    linalg.yield %a : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// 1-D max pooling as torch-mlir emits it: a -inf fill, then the pooling,
// between reshapes that go into the pooling's request.

// CHECK-LABEL: func.func @max_pool1d
// CHECK: dice.kernel_request "{{[0-9a-f]+}}" level(1) (%{{.*}}) : (tensor<2x3x9xf32>) -> tensor<2x3x4xf32> scaffold <
// CHECK-SAME: \22fn\22:\22max_pool\22
// CHECK-NOT: null
func.func @max_pool1d(%arg0: tensor<2x3x9xf32>) -> tensor<2x3x4xf32> {
  %cst = arith.constant 0xFF800000 : f32
  %expanded = tensor.expand_shape %arg0 [[0], [1], [2, 3]] output_shape [2, 3, 1, 9] : tensor<2x3x9xf32> into tensor<2x3x1x9xf32>
  %0 = tensor.empty() : tensor<2x3x1x4xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<2x3x1x4xf32>) -> tensor<2x3x1x4xf32>
  %2 = tensor.empty() : tensor<1x3xf32>
  %3 = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<[1, 2]> : vector<2xi64>} ins(%expanded, %2 : tensor<2x3x1x9xf32>, tensor<1x3xf32>) outs(%1 : tensor<2x3x1x4xf32>) -> tensor<2x3x1x4xf32>
  %collapsed = tensor.collapse_shape %3 [[0], [1, 2], [3]] : tensor<2x3x1x4xf32> into tensor<2x3x4xf32>
  return %collapsed : tensor<2x3x4xf32>
}

// -----

// A masked score (masked_fill with -inf), then its row maximum from a -inf
// fill: the first half of a masked softmax, one request.

#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func @masked_row_max
// CHECK: dice.kernel_request "{{[0-9a-f]+}}" level(2) (%{{.*}}, %{{.*}}) : (tensor<4x4xf32>, tensor<4x4xi1>) -> tensor<4xf32> scaffold <
// CHECK-SAME: \22value\22:\22-inf\22
// CHECK-SAME: torch.where(x1, x0, float('-inf'))
// CHECK-NOT: null
func.func @masked_row_max(%s: tensor<4x4xf32>, %mask: tensor<4x4xi1>) -> tensor<4xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %m = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%s, %mask : tensor<4x4xf32>, tensor<4x4xi1>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%in: f32, %keep: i1, %out: f32):
    %v = arith.select %keep, %in, %ninf : f32
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %e1 = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %r = linalg.generic {indexing_maps = [#map, #row], iterator_types = ["parallel", "reduction"]} ins(%m : tensor<4x4xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %x = arith.maximumf %in, %acc : f32
    linalg.yield %x : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// NaN and -0.0: NaN as a string, -0.0 kept apart from 0.0 (which is left
// out of the JSON).

#map = affine_map<(d0) -> (d0)>

// CHECK-LABEL: func.func @nan_and_negative_zero
// CHECK: scaffold <
// CHECK-SAME: \22value\22:\22nan\22
// CHECK-SAME: \22value\22:-0.0
// CHECK-SAME: torch.add(x0, float('nan'))
// CHECK-SAME: torch.mul(t{{[0-9]+}}, -0.0)
// CHECK-NOT: null
func.func @nan_and_negative_zero(%x: tensor<8xf32>) -> tensor<8xf32> {
  %nan = arith.constant 0x7FC00000 : f32
  %nz = arith.constant -0.000000e+00 : f32
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %nan : f32
    %m = arith.mulf %a, %nz : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
