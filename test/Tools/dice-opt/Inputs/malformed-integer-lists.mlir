// Ops whose MLIR 22 parsers crash on a malformed integer list (they store
// the null attribute the failed parse returns); dice-opt must report them.
func.func @transpose(%a: tensor<2x4xf32>, %b: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %0 = linalg.transpose ins(%a : tensor<2x4xf32>) outs(%b : tensor<4x2xf32>) permutation = [1, 0]
  return %0 : tensor<4x2xf32>
}

// -----

func.func @broadcast(%a: tensor<4xf32>, %b: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %0 = linalg.broadcast ins(%a : tensor<4xf32>) outs(%b : tensor<2x4xf32>) dimensions = [0, x]
  return %0 : tensor<2x4xf32>
}
