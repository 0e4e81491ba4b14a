// RUN: dice-opt %s --dice-outline=granularity=function --dice-scaffold | FileCheck %s
// RUN: dice-opt %s --dice-outline=granularity=op --dice-scaffold | dice-plan --function=gather | FileCheck %s --check-prefix=PLAN

// Reference programs compute what the IR computes: one regression per kind
// of drift (windows of a ceil-mode pooling, 0-d shapes, integer division
// and reductions, unsigned ops, loop indices, gathers).

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>

// A ceil-mode pooling: torch-mlir pads so far that torch's pooling of the
// padded input has more windows than linalg's output; the program keeps the
// leading windows, as many as the output has.
// CHECK-LABEL: func.func @ceil_pool
// CHECK: reference = "{{.*}}avg_pool2d(t1, kernel_size=(3, 3), stride=(1, 1), padding=(0, 0), divisor_override=1)\0A
// CHECK-SAME: t3 = t2[0:1, 0:1, 0:2, 0:2]\0A        return t3\0A
func.func @ceil_pool(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %c0 = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 0, 0] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %c0 : f32
  } : tensor<1x1x4x4xf32> to tensor<1x1x5x5xf32>
  %e = tensor.empty() : tensor<1x1x2x2xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %w = tensor.empty() : tensor<3x3xf32>
  %s = linalg.pooling_nchw_sum {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%p, %w : tensor<1x1x5x5xf32>, tensor<3x3xf32>) outs(%f : tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %s : tensor<1x1x2x2xf32>
}

// A reshape to a 0-d tensor spells its empty shape.
// CHECK-LABEL: func.func @to_0d
// CHECK: reference = "{{.*}}t1 = x0.reshape(())\0A
func.func @to_0d(%x: tensor<1x1xf32>) -> tensor<f32> {
  %c = tensor.collapse_shape %x [] : tensor<1x1xf32> into tensor<f32>
  return %c : tensor<f32>
}

// Integer division truncates (divsi) or floors (floordivsi); remsi has the
// dividend's sign.
// CHECK-LABEL: func.func @int_div
// CHECK: reference = "{{.*}}t2 = torch.div(x0, x1, rounding_mode='trunc')\0A
// CHECK-SAME: t3 = torch.div(x0, x1, rounding_mode='floor')\0A
// CHECK-SAME: t4 = torch.fmod(x0, x1)\0A
func.func @int_div(%a: tensor<4x6xi64>, %b: tensor<4x6xi64>) -> (tensor<4x6xi64>, tensor<4x6xi64>, tensor<4x6xi64>) {
  %e = tensor.empty() : tensor<4x6xi64>
  %r:3 = linalg.generic {indexing_maps = [#id2, #id2, #id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<4x6xi64>, tensor<4x6xi64>) outs(%e, %e, %e : tensor<4x6xi64>, tensor<4x6xi64>, tensor<4x6xi64>) {
  ^bb0(%p: i64, %q: i64, %o: i64, %o2: i64, %o3: i64):
    %t = arith.divsi %p, %q : i64
    %f = arith.floordivsi %p, %q : i64
    %m = arith.remsi %p, %q : i64
    linalg.yield %t, %f, %m : i64, i64, i64
  } -> (tensor<4x6xi64>, tensor<4x6xi64>, tensor<4x6xi64>)
  return %r#0, %r#1, %r#2 : tensor<4x6xi64>, tensor<4x6xi64>, tensor<4x6xi64>
}

// int64's largest value is the min-reduction's identity: no double holds it,
// and the program needs none.
// CHECK-LABEL: func.func @int_min
// CHECK: reference = "{{.*}}t1 = torch.amin(x0, dim=(1,))\0A        return t1\0A
func.func @int_min(%a: tensor<4x6xi64>) -> tensor<4xi64> {
  %big = arith.constant 9223372036854775807 : i64
  %e = tensor.empty() : tensor<4xi64>
  %f = linalg.fill ins(%big : i64) outs(%e : tensor<4xi64>) -> tensor<4xi64>
  %r = linalg.generic {indexing_maps = [#id2, #red], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<4x6xi64>) outs(%f : tensor<4xi64>) {
  ^bb0(%p: i64, %o: i64):
    %m = arith.minsi %p, %o : i64
    linalg.yield %m : i64
  } -> tensor<4xi64>
  return %r : tensor<4xi64>
}

// torch sums int8 in int64; the wrapped int8 sum is its low bits.
// CHECK-LABEL: func.func @sum_i8
// CHECK: reference = "{{.*}}t1 = torch.sum(x0, dim=(1,))\0A        t2 = t1.to(torch.int8)\0A
func.func @sum_i8(%a: tensor<4x6xi8>) -> tensor<4xi8> {
  %z = arith.constant 0 : i8
  %e = tensor.empty() : tensor<4xi8>
  %f = linalg.fill ins(%z : i8) outs(%e : tensor<4xi8>) -> tensor<4xi8>
  %r = linalg.generic {indexing_maps = [#id2, #red], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<4x6xi8>) outs(%f : tensor<4xi8>) {
  ^bb0(%p: i8, %o: i8):
    %m = arith.addi %p, %o : i8
    linalg.yield %m : i8
  } -> tensor<4xi8>
  return %r : tensor<4xi8>
}

// Unsigned comparison and zero extension, composed from signed ops.
// CHECK-LABEL: func.func @unsigned
// CHECK: reference = "{{.*}}t5 = torch.lt(x0, 0)\0A        t6 = torch.lt(x1, 0)\0A        t7 = torch.eq(t5, t6)\0A        t8 = torch.lt(x0, x1)\0A        t9 = torch.where(t7, t8, t6)\0A
// CHECK-SAME: t11 = x0.to(torch.int32)\0A        t12 = torch.add(t11, 256)\0A        t13 = torch.where(t10, t12, t11)\0A
func.func @unsigned(%a: tensor<4xi8>, %b: tensor<4xi8>) -> (tensor<4xi1>, tensor<4xi32>) {
  %e = tensor.empty() : tensor<4xi1>
  %e2 = tensor.empty() : tensor<4xi32>
  %r:2 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a, %b : tensor<4xi8>, tensor<4xi8>) outs(%e, %e2 : tensor<4xi1>, tensor<4xi32>) {
  ^bb0(%p: i8, %q: i8, %o: i1, %o2: i32):
    %c = arith.cmpi ult, %p, %q : i8
    %x = arith.extui %p : i8 to i32
    linalg.yield %c, %x : i1, i32
  } -> (tensor<4xi1>, tensor<4xi32>)
  return %r#0, %r#1 : tensor<4xi1>, tensor<4xi32>
}

// linalg.index: an arange along its loop dim of the iteration space.
// CHECK-LABEL: func.func @index_mask
// CHECK: reference = "{{.*}}t2 = torch.arange(5, dtype=torch.int64, device=x0.device).reshape(1, 5)\0A
// CHECK-SAME: t3 = torch.arange(3, dtype=torch.int64, device=x0.device).reshape(3, 1)\0A        t4 = torch.le(t2, t3)\0A
func.func @index_mask(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x5xf32>
  %r = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<3x5xf32>) outs(%e : tensor<3x5xf32>) {
  ^bb0(%p: f32, %o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %c = arith.cmpi sle, %j, %i : index
    %s = arith.select %c, %p, %z : f32
    linalg.yield %s : f32
  } -> tensor<3x5xf32>
  return %r : tensor<3x5xf32>
}

// tensor.extract at computed indices of a captured tensor: advanced indexing,
// the captured tensor an operand of the request.
// CHECK-LABEL: func.func @gather
// CHECK: dice.kernel_request {{.*}} (%arg1, %arg0)
// CHECK-SAME: t4 = x1[t2, t3]\0A
// PLAN: "function":"gather"
// PLAN-SAME: "steps":[{"args":[1,0],
// PLAN-SAME: "kind":"program","level":1,
// PLAN-SAME: "program":{"inputs":[{"dtype":"int64","shape":[2]},{"dtype":"float32","shape":[4,3]}]
// PLAN-SAME: "fn":"index"
func.func @gather(%src: tensor<4x3xf32>, %idx: tensor<2xi64>) -> tensor<2x3xf32> {
  %e = tensor.empty() : tensor<2x3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, #id2], iterator_types = ["parallel", "parallel"]} ins(%idx : tensor<2xi64>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%i: i64, %o: f32):
    %ii = arith.index_cast %i : i64 to index
    %j = linalg.index 1 : index
    %v = tensor.extract %src[%ii, %j] : tensor<4x3xf32>
    linalg.yield %v : f32
  } -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}

// torch-mlir's integer remainder compares signs with a boolean xor: `ne`.
// CHECK-LABEL: func.func @bool_xor
// CHECK: reference = "{{.*}}t5 = torch.ne(t3, t4)\0A
func.func @bool_xor(%a: tensor<4xi64>, %b: tensor<4xi64>) -> tensor<4xi1> {
  %z = arith.constant 0 : i64
  %e = tensor.empty() : tensor<4xi1>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a, %b : tensor<4xi64>, tensor<4xi64>) outs(%e : tensor<4xi1>) {
  ^bb0(%p: i64, %q: i64, %o: i1):
    %x = arith.cmpi slt, %p, %z : i64
    %y = arith.cmpi slt, %q, %z : i64
    %n = arith.xori %x, %y : i1
    linalg.yield %n : i1
  } -> tensor<4xi1>
  return %r : tensor<4xi1>
}
