// RUN: dice-opt %s -split-input-file --dice-outline=granularity=op | FileCheck %s --check-prefix=OP
// RUN: dice-opt %s -split-input-file --dice-outline=granularity=fusion | FileCheck %s --check-prefix=FUSION
// RUN: dice-opt %s -split-input-file --dice-outline=granularity=function | FileCheck %s --check-prefix=FUNCTION
// RUN: not dice-opt %s -split-input-file --dice-outline=granularity=loops 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not dice-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(dice-outline{granularity=loops}))" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not dice-opt %s -split-input-file --dice-pipeline="granularity=loops engine=model" 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: for the --granularity option: must be 'op', 'fusion' or 'function', got 'loops'

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// gemm + bias + relu: three single-op requests, one fusion, one whole
// function. The bias (a dense constant) becomes an operand; the zero, the
// empty tensor and the fill are rematerialized inside each request.

// OP-LABEL: func.func @gemm_bias_relu
// OP-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x16xf32>)
// Every op carries its index in the block before outlining; the clones of a
// rematerialized op share it.
// OP: %[[BIAS:.*]] = arith.constant {dice.position = 1 : i64} dense<
// OP: %[[MM:.*]] = dice.kernel_request "{{[0-9a-f]+}}" level(1) (%[[X]], %[[W]])
// OP:   arith.constant {dice.position = 0 : i64} 0.0
// OP:   tensor.empty() {dice.position = 2 : i64}
// OP:   linalg.fill {dice.position = 3 : i64}
// OP:   linalg.matmul {dice.position = 4 : i64}
// OP:   dice.yield
// OP: %[[ADD:.*]] = dice.kernel_request "{{[0-9a-f]+}}" level(1) (%[[MM]], %[[BIAS]])
// OP:   tensor.empty() {dice.position = 2 : i64}
// OP:   linalg.generic
// OP-NOT: linalg.generic
// OP:   dice.yield
// OP: %[[RELU:.*]] = dice.kernel_request "{{[0-9a-f]+}}" level(1) (%[[ADD]])
// OP:   linalg.generic
// OP:   dice.yield
// OP: return {dice.position = 7 : i64} %[[RELU]]

// FUSION-LABEL: func.func @gemm_bias_relu
// FUSION: %[[R:.*]] = dice.kernel_request "{{[0-9a-f]+}}" level(2) (%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
// FUSION:   linalg.matmul
// FUSION:   linalg.generic
// FUSION:   linalg.generic
// FUSION:   dice.yield
// FUSION-NEXT: }
// FUSION-NEXT: return {dice.position = 7 : i64} %[[R]]

// FUNCTION-LABEL: func.func @gemm_bias_relu
// FUNCTION: dice.kernel_request "{{[0-9a-f]+}}" level(3)
// FUNCTION-NOT: dice.kernel_request
// FUNCTION: return
func.func @gemm_bias_relu(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %bias = arith.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0]> : tensor<16xf32>
  %empty = tensor.empty() : tensor<4x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<4x16xf32>) -> tensor<4x16xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%init : tensor<4x16xf32>) -> tensor<4x16xf32>
  %biased = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%mm, %bias : tensor<4x16xf32>, tensor<16xf32>) outs(%empty : tensor<4x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%biased : tensor<4x16xf32>) outs(%empty : tensor<4x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %c = arith.cmpf ugt, %a, %zero : f32
    %r = arith.select %c, %a, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  return %relu : tensor<4x16xf32>
}

// -----

// A weight that is only rearranged (transposed) stays outside with its
// transpose; the transposed value is the request's operand.

// FUSION-LABEL: func.func @transposed_weight
// FUSION: %[[T:.*]] = linalg.transpose
// FUSION: dice.kernel_request "{{[0-9a-f]+}}" level(1) (%{{.*}}, %[[T]])
// FUSION:   linalg.matmul
// FUSION-NOT: linalg.transpose
// FUSION: return
func.func @transposed_weight(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %e = tensor.empty() : tensor<3x2xf32>
  %t = linalg.transpose ins(%w : tensor<2x3xf32>) outs(%e : tensor<3x2xf32>) permutation = [1, 0]
  %o = tensor.empty() : tensor<2x2xf32>
  %init = linalg.fill ins(%zero : f32) outs(%o : tensor<2x2xf32>) -> tensor<2x2xf32>
  %mm = linalg.matmul ins(%x, %t : tensor<2x3xf32>, tensor<3x2xf32>) outs(%init : tensor<2x2xf32>) -> tensor<2x2xf32>
  return %mm : tensor<2x2xf32>
}

// -----

// An elementwise prologue is its own chain; the matmul takes only its
// epilogue. An elementwise op reading two groups joins the one it can join
// without a cycle: add(mm, rowsum(mm)) cannot join mm's group (rowsum sits
// between), so it joins the reduction's.

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d0)>

// FUSION-LABEL: func.func @chains
// FUSION: %[[P:.*]] = dice.kernel_request "{{[0-9a-f]+}}" level(2) (%{{.*}})
// FUSION:   math.exp
// FUSION:   math.tanh
// FUSION: %[[MM:.*]] = dice.kernel_request "{{[0-9a-f]+}}" level(1) (%[[P]], %{{.*}})
// FUSION:   linalg.matmul
// FUSION-NOT: arith.addf
// FUSION:   dice.yield
// FUSION: %[[RS:.*]] = dice.kernel_request "{{[0-9a-f]+}}" level(2) (%[[MM]])
// FUSION:   iterator_types = ["parallel", "reduction"]
// FUSION:   iterator_types = ["parallel", "parallel"]
// FUSION:   dice.yield
// FUSION: return {{{.*}}} %[[RS]]
func.func @chains(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %exp = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<4x4xf32>
  %tanh = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%exp : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.tanh %a : f32
    linalg.yield %r : f32
  } -> tensor<4x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %mm = linalg.matmul ins(%tanh, %w : tensor<4x4xf32>, tensor<4x4xf32>) outs(%init : tensor<4x4xf32>) -> tensor<4x4xf32>
  %re = tensor.empty() : tensor<4xf32>
  %rinit = linalg.fill ins(%zero : f32) outs(%re : tensor<4xf32>) -> tensor<4xf32>
  %rowsum = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["parallel", "reduction"]} ins(%mm : tensor<4x4xf32>) outs(%rinit : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%mm, %rowsum : tensor<4x4xf32>, tensor<4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  return %sum : tensor<4x4xf32>
}

// -----

// Fingerprints: the same computation has the same fingerprint whatever its
// SSA names, position and function; another shape changes it.

#id = affine_map<(d0) -> (d0)>

// OP-LABEL: func.func @exp_a
// OP: dice.kernel_request "[[FP:[0-9a-f]+]]" level(1)
func.func @exp_a(%input: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%input : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %x = math.exp %a : f32
    linalg.yield %x : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// OP-LABEL: func.func @exp_renamed_and_moved
// OP: dice.kernel_request "[[FP]]" level(1)
func.func @exp_renamed_and_moved(%unused: tensor<2xf32>, %v: tensor<8xf32>) -> (tensor<2xf32>, tensor<8xf32>) {
  %c1 = arith.constant 1 : index
  %out = tensor.empty() : tensor<8xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%v : tensor<8xf32>) outs(%out : tensor<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %ex = math.exp %in : f32
    linalg.yield %ex : f32
  } -> tensor<8xf32>
  return %unused, %y : tensor<2xf32>, tensor<8xf32>
}

// OP-LABEL: func.func @exp_other_shape
// OP-NOT: "[[FP]]"
// OP: dice.kernel_request "{{[0-9a-f]+}}" level(1)
func.func @exp_other_shape(%input: tensor<16xf32>) -> tensor<16xf32> {
  %e = tensor.empty() : tensor<16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%input : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %x = math.exp %a : f32
    linalg.yield %x : f32
  } -> tensor<16xf32>
  return %r : tensor<16xf32>
}
