// RUN: dice-opt %s -split-input-file -verify-diagnostics --dice-outline=granularity=fusion --dice-scaffold | FileCheck %s
// RUN: dice-opt %s -split-input-file --dice-outline=granularity=op | FileCheck %s --check-prefix=OP
// RUN: dice-opt %s -split-input-file --dice-outline=granularity=op --dice-resolve | FileCheck %s --check-prefix=BACK

// A scalar argument of the function (a Python int or float torch-mlir kept
// in the signature, as a dynamic int is) is an operand of the requests that
// read it: a 0-d tensor of its dtype, made once per function, from which
// the request's body reads the number again. Arithmetic on scalar arguments
// (`n + 1`) is computed inside each request that reads it. The reference
// program takes the number as a 0-d tensor input.

#id = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-LABEL: func.func @scaled
// CHECK: %[[N:.*]] = tensor.from_elements %arg1 : tensor<i64>
// CHECK-NOT: arith.addi
// CHECK: dice.kernel_request "{{[0-9a-f]+}}" level(2) (%arg0, %[[N]]) : (tensor<4x8xf32>, tensor<i64>) -> tensor<4x8xf32>
// CHECK-SAME: \22inputs\22:[{\22dtype\22:\22float32\22,\22shape\22:[4,8]},{\22dtype\22:\22int64\22,\22shape\22:[]}]
// CHECK-SAME: torch.add(x1, 1)
// CHECK: ^bb0(%{{.*}}: tensor<4x8xf32>, %[[T:.*]]: tensor<i64>):
// CHECK: %[[E:.*]] = tensor.extract %[[T]][] : tensor<i64>
// CHECK: arith.addi %[[E]], %{{.*}} : i64

// At op granularity both requests read the one wrapper, and each computes
// `n + 1` itself; falling back restores the function as it was.
// OP-LABEL: func.func @scaled
// OP: %[[N:.*]] = tensor.from_elements %arg1 : tensor<i64>
// OP-NOT: tensor.from_elements
// OP: dice.kernel_request {{.*}}(%arg0, %[[N]])
// OP: arith.addi
// OP: dice.kernel_request {{.*}}(%{{.*}}, %[[N]])
// OP: arith.addi
// BACK-LABEL: func.func @scaled(%arg0: tensor<4x8xf32>, %arg1: i64)
// BACK-NOT: tensor.from_elements
// BACK-NOT: tensor.extract
// BACK: %[[S:.*]] = arith.addi %arg1, %{{.*}} : i64
// BACK-NOT: arith.addi
// BACK: arith.sitofp %[[S]]
// BACK: arith.sitofp %[[S]]
func.func @scaled(%x: tensor<4x8xf32>, %n: i64) -> tensor<4x8xf32> {
  %one = arith.constant 1 : i64
  %e = tensor.empty() : tensor<4x8xf32>
  %n1 = arith.addi %n, %one : i64
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %f = arith.sitofp %n1 : i64 to f32
    %m = arith.mulf %v, %f : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %f = arith.sitofp %n1 : i64 to f32
    %s = arith.addf %v, %f : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A float argument read directly in a payload: a float64 0-d input.
// CHECK-LABEL: func.func @float_argument
// CHECK: %[[A:.*]] = tensor.from_elements %arg1 : tensor<f64>
// CHECK: dice.kernel_request "{{[0-9a-f]+}}" level(1) (%arg0, %[[A]]) : (tensor<4x8xf32>, tensor<f64>)
// CHECK-SAME: {\22dtype\22:\22float64\22,\22shape\22:[]}
func.func @float_argument(%x: tensor<4x8xf32>, %alpha: f64) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %f = arith.truncf %alpha : f64 to f32
    %m = arith.mulf %v, %f : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A number read out of a tensor the function computes is no argument: the
// op that reads it stays outside, and no wrapper is left behind.
// CHECK-LABEL: func.func @computed_number
// CHECK-NOT: tensor.from_elements
// CHECK: dice.kernel_request
// CHECK: tensor.extract
// CHECK-NOT: dice.kernel_request
// CHECK: return
func.func @computed_number(%x: tensor<4x8xf32>, %n: i64) -> tensor<4x8xf32> {
  %c0 = arith.constant 0 : index
  %e = tensor.empty() : tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = math.exp %v : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %first = tensor.extract %y[%c0, %c0] : tensor<4x8xf32>
  // expected-remark @+1 {{stays outside kernel requests: it reads a scalar that is computed at run time}}
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.mulf %v, %first : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
