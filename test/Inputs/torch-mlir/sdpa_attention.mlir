// Exported from test/torch_models/models.py:sdpa_attention by test/torch_models/export.py; do not edit.
module {
  func.func @sdpa_attention(%arg0: tensor<1x2x8x8xf32>, %arg1: tensor<1x2x8x8xf32>, %arg2: tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %collapsed = tensor.collapse_shape %arg0 [[0, 1], [2], [3]] : tensor<1x2x8x8xf32> into tensor<2x8x8xf32>
    %collapsed_0 = tensor.collapse_shape %arg1 [[0, 1], [2], [3]] : tensor<1x2x8x8xf32> into tensor<2x8x8xf32>
    %collapsed_1 = tensor.collapse_shape %arg2 [[0, 1], [2], [3]] : tensor<1x2x8x8xf32> into tensor<2x8x8xf32>
    %0 = tensor.empty() : tensor<2x8x8xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
    %2 = tm_tensor.attention ins(%collapsed, %collapsed_0, %collapsed_1 : tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>) outs(%1 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
    %expanded = tensor.expand_shape %2 [[0, 1], [2], [3]] output_shape [1, 2, 8, 8] : tensor<2x8x8xf32> into tensor<1x2x8x8xf32>
    return %expanded : tensor<1x2x8x8xf32>
  }
}
