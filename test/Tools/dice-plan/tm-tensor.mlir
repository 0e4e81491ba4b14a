// RUN: split-file %s %t
// RUN: dice-opt %t/cumsum.mlir --dice-outline=granularity=fusion --dice-scaffold | dice-plan | FileCheck %s --check-prefix=SUM
// RUN: dice-opt %t/cumprod.mlir --dice-outline=granularity=fusion --dice-scaffold | dice-plan | FileCheck %s --check-prefix=PROD
// RUN: dice-opt %t/exclusive.mlir --dice-outline=granularity=fusion --dice-scaffold | not dice-plan 2>&1 | FileCheck %s --check-prefix=EXCLUSIVE
// RUN: dice-opt %t/running.mlir --dice-outline=granularity=fusion --dice-scaffold | not dice-plan 2>&1 | FileCheck %s --check-prefix=RUNNING
// RUN: dice-opt %t/max.mlir --dice-outline=granularity=fusion --dice-scaffold | not dice-plan 2>&1 | FileCheck %s --check-prefix=MAX
// RUN: dice-opt %t/index-add.mlir --dice-outline=granularity=fusion --dice-scaffold | dice-plan | FileCheck %s --check-prefix=ADD
// RUN: dice-opt %t/scatter-mul.mlir --dice-outline=granularity=fusion --dice-scaffold | dice-plan | FileCheck %s --check-prefix=MUL
// RUN: dice-opt %t/scatter-sub.mlir --dice-outline=granularity=fusion --dice-scaffold | not dice-plan 2>&1 | FileCheck %s --check-prefix=SUB
// RUN: dice-opt %t/sort.mlir --dice-outline=granularity=fusion --dice-scaffold | dice-plan | FileCheck %s --check-prefix=SORT

// torch-mlir's cumulative sums and products (tm_tensor.scan, in generic
// form: dice-opt does not register the dialect) go into kernel requests
// and render in the plan as torch.cumsum / torch.cumprod along the scan's
// dimension, naming the result's dtype where torch's default is another
// (it widens integers to int64). Only an inclusive scan whose step is the
// sum or product of the running value and the next element is one; every
// other scan is an error that says why, never another computation.

// SUM: "fn":"cumsum","ints":{"dim":[1]},"type":{"dtype":"float32","shape":[4,6]}
// SUM: torch.cumsum(x0, dim=1)\n
// PROD: "fn":"cumprod","ints":{"dim":[0]},"type":{"dtype":"int32","shape":[5,3]}
// PROD: torch.cumprod(x0, dim=0, dtype=torch.int32)
// EXCLUSIVE: 'tm_tensor.scan' is an exclusive scan, which no torch function computes
// RUNNING: 'tm_tensor.scan' has its running value read, which torch.cumsum does not return
// MAX: 'tm_tensor.scan' steps by something other than the sum or the product

// Scatters (tm_tensor.scatter: scatter, index_put, index_add) render as
// Tensor.index_put, overwriting or adding; an update window of width 1 at
// the indexed dimension loses that dimension first. A product, max or min
// renders as index_reduce over the indexed dims flattened. Other
// combinations are errors.
// ADD: "fn":"reshape"
// ADD-SAME: "type":{"dtype":"float32","shape":[3,3]}
// ADD: "fn":"index_put","ints":{"accumulate":[1]},"type":{"dtype":"float32","shape":[4,3]}
// ADD: .index_put(tuple(x1.long().unbind(1)), t{{[0-9]+}}, accumulate=True)
// MUL: "fn":"index_reduce","ints":{"reduce":[0]},"type":{"dtype":"float32","shape":[4,3]}
// MUL: .index_reduce(0, t{{[0-9]+}}, x0, 'prod', include_self=True)
// SUB: 'tm_tensor.scatter' combines an update with the original element by other than overwriting, adding, multiplying

// Sorts (tm_tensor.sort: sort, topk, argsort) render as a stable argsort of
// the first operand, in the comparator's order, and each operand indexed by
// it along the sorted dim.
// SORT: "fn":"argsort","ints":{"descending":[1],"dim":[1]},"type":{"dtype":"int64","shape":[4,6]}
// SORT: torch.argsort(x0, dim=1, descending=True, stable=True)

//--- cumsum.mlir
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @cumsum(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x6xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %e1 = tensor.empty() : tensor<4xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %s:2 = "tm_tensor.scan"(%x, %f, %f1) <{dimension = 1 : i64, inclusive = true, operandSegmentSizes = array<i32: 1, 2>}> ({
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

//--- cumprod.mlir
func.func @cumprod(%x: tensor<5x3xi32>) -> tensor<5x3xi32> {
  %one = arith.constant 1 : i32
  %e = tensor.empty() : tensor<5x3xi32>
  %f = linalg.fill ins(%one : i32) outs(%e : tensor<5x3xi32>) -> tensor<5x3xi32>
  %e1 = tensor.empty() : tensor<3xi32>
  %f1 = linalg.fill ins(%one : i32) outs(%e1 : tensor<3xi32>) -> tensor<3xi32>
  %s:2 = "tm_tensor.scan"(%x, %f, %f1) <{dimension = 0 : i64, inclusive = true, operandSegmentSizes = array<i32: 1, 2>}> ({
  ^bb0(%a: i32, %b: i32):
    %t = arith.muli %b, %a : i32
    "tm_tensor.yield"(%t) : (i32) -> ()
  }) : (tensor<5x3xi32>, tensor<5x3xi32>, tensor<3xi32>) -> (tensor<5x3xi32>, tensor<3xi32>)
  return %s#0 : tensor<5x3xi32>
}

//--- exclusive.mlir
func.func @exclusive(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x6xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %e1 = tensor.empty() : tensor<4xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %s:2 = "tm_tensor.scan"(%x, %f, %f1) <{dimension = 1 : i64, inclusive = false, operandSegmentSizes = array<i32: 1, 2>}> ({
  ^bb0(%a: f32, %b: f32):
    %t = arith.addf %a, %b : f32
    "tm_tensor.yield"(%t) : (f32) -> ()
  }) : (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4xf32>) -> (tensor<4x6xf32>, tensor<4xf32>)
  return %s#0 : tensor<4x6xf32>
}

//--- running.mlir
func.func @running(%x: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x6xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %e1 = tensor.empty() : tensor<4xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %s:2 = "tm_tensor.scan"(%x, %f, %f1) <{dimension = 1 : i64, inclusive = true, operandSegmentSizes = array<i32: 1, 2>}> ({
  ^bb0(%a: f32, %b: f32):
    %t = arith.addf %a, %b : f32
    "tm_tensor.yield"(%t) : (f32) -> ()
  }) : (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4xf32>) -> (tensor<4x6xf32>, tensor<4xf32>)
  return %s#0, %s#1 : tensor<4x6xf32>, tensor<4xf32>
}

//--- max.mlir
func.func @running_max(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x6xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %e1 = tensor.empty() : tensor<4xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %s:2 = "tm_tensor.scan"(%x, %f, %f1) <{dimension = 1 : i64, inclusive = true, operandSegmentSizes = array<i32: 1, 2>}> ({
  ^bb0(%a: f32, %b: f32):
    %t = arith.maximumf %a, %b : f32
    "tm_tensor.yield"(%t) : (f32) -> ()
  }) : (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4xf32>) -> (tensor<4x6xf32>, tensor<4xf32>)
  return %s#0 : tensor<4x6xf32>
}

//--- index-add.mlir
func.func @index_add(%x: tensor<4x3xf32>, %i: tensor<3x1xi64>, %u: tensor<3x1x3xf32>) -> tensor<4x3xf32> {
  %s = "tm_tensor.scatter"(%u, %i, %x) <{dimension_map = array<i64: 0>, operandSegmentSizes = array<i32: 2, 1>, unique_indices = false}> ({
  ^bb0(%a: f32, %b: f32):
    %t = arith.addf %b, %a : f32
    "tm_tensor.yield"(%t) : (f32) -> ()
  }) : (tensor<3x1x3xf32>, tensor<3x1xi64>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %s : tensor<4x3xf32>
}

//--- scatter-mul.mlir
func.func @scatter_mul(%x: tensor<4x3xf32>, %i: tensor<3x1xi64>, %u: tensor<3x3xf32>) -> tensor<4x3xf32> {
  %s = "tm_tensor.scatter"(%u, %i, %x) <{dimension_map = array<i64: 0>, operandSegmentSizes = array<i32: 2, 1>, unique_indices = true}> ({
  ^bb0(%a: f32, %b: f32):
    %t = arith.mulf %b, %a : f32
    "tm_tensor.yield"(%t) : (f32) -> ()
  }) : (tensor<3x3xf32>, tensor<3x1xi64>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %s : tensor<4x3xf32>
}

//--- scatter-sub.mlir
func.func @scatter_sub(%x: tensor<4x3xf32>, %i: tensor<3x1xi64>, %u: tensor<3x3xf32>) -> tensor<4x3xf32> {
  %s = "tm_tensor.scatter"(%u, %i, %x) <{dimension_map = array<i64: 0>, operandSegmentSizes = array<i32: 2, 1>, unique_indices = true}> ({
  ^bb0(%a: f32, %b: f32):
    %t = arith.subf %b, %a : f32
    "tm_tensor.yield"(%t) : (f32) -> ()
  }) : (tensor<3x3xf32>, tensor<3x1xi64>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %s : tensor<4x3xf32>
}

//--- sort.mlir
func.func @sort(%x: tensor<4x6xf32>, %i: tensor<4x6xi64>) -> (tensor<4x6xf32>, tensor<4x6xi64>) {
  %s:2 = "tm_tensor.sort"(%x, %i) <{dimension = 1 : i64, operandSegmentSizes = array<i32: 0, 2>}> ({
  ^bb0(%a: f32, %b: f32, %c: i64, %d: i64):
    %t = arith.cmpf oge, %a, %b : f32
    "tm_tensor.yield"(%t) : (i1) -> ()
  }) : (tensor<4x6xf32>, tensor<4x6xi64>) -> (tensor<4x6xf32>, tensor<4x6xi64>)
  return %s#0, %s#1 : tensor<4x6xf32>, tensor<4x6xi64>
}
