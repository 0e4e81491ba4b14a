// linalg.transpose's permutation must be an integer list: MLIR 22's parser
// crashes on anything else.
func.func @transpose_bad(%a: tensor<2x4xf32>, %b: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %0 = linalg.transpose ins(%a : tensor<2x4xf32>) outs(%b : tensor<4x2xf32>) permutation = 1
  return %0 : tensor<4x2xf32>
}
