// RUN: dice-opt %s --dice-outline=granularity=op --dice-scaffold | FileCheck %s --check-prefix=OP
// RUN: dice-opt %s --dice-outline=granularity=fusion --dice-scaffold | FileCheck %s --check-prefix=FUSION
// RUN: dice-opt %s --dice-outline=granularity=function --dice-scaffold | FileCheck %s --check-prefix=FUNCTION

// torch-mlir's cumulative sum (tm_tensor.scan, in generic form: dice-opt
// does not register the dialect) goes into requests like a linalg op, with
// the fills of its initial values; its reference program is torch.cumsum
// along the scan's dimension. At op granularity it is a request of its own
// and the tanh after it another; at fusion granularity the scan starts a
// group, as a matmul does, and the tanh (its elementwise epilogue) joins
// it; at function granularity one request holds both.

// OP: dice.kernel_request {{.*}}cumsum\22,\22ints\22:{\22dim\22:[1]}
// OP: torch.cumsum(x0, dim=1)
// OP: dice.kernel_request {{.*}}\22fn\22:\22tanh\22
// FUSION: dice.kernel_request
// FUSION-SAME: torch.cumsum(x0, dim=1)\0A        t{{[0-9]+}} = torch.tanh(
// FUSION-NOT: dice.kernel_request
// FUNCTION: dice.kernel_request
// FUNCTION-SAME: torch.cumsum(x0, dim=1)\0A        t{{[0-9]+}} = torch.tanh(

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @cumsum_tanh(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
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
