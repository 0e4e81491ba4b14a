// Exported from test/torch_models/models.py:sdpa_attention by test/torch_models/export.py; do not edit.
"builtin.module"() ({
  "func.func"() <{function_type = (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>, sym_name = "sdpa_attention"}> ({
  ^bb0(%arg0: tensor<1x2x8x8xf32>, %arg1: tensor<1x2x8x8xf32>, %arg2: tensor<1x2x8x8xf32>):
    %0 = "arith.constant"() <{value = 0.000000e+00 : f32}> : () -> f32
    %1 = "tensor.collapse_shape"(%arg0) <{reassociation = [[0, 1], [2], [3]]}> : (tensor<1x2x8x8xf32>) -> tensor<2x8x8xf32>
    %2 = "tensor.collapse_shape"(%arg1) <{reassociation = [[0, 1], [2], [3]]}> : (tensor<1x2x8x8xf32>) -> tensor<2x8x8xf32>
    %3 = "tensor.collapse_shape"(%arg2) <{reassociation = [[0, 1], [2], [3]]}> : (tensor<1x2x8x8xf32>) -> tensor<2x8x8xf32>
    %4 = "tensor.empty"() : () -> tensor<2x8x8xf32>
    %5 = "linalg.fill"(%0, %4) <{operandSegmentSizes = array<i32: 1, 1>}> ({
    ^bb0(%arg3: f32, %arg4: f32):
      "linalg.yield"(%arg3) : (f32) -> ()
    }) : (f32, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
    %6 = "tm_tensor.attention"(%1, %2, %3, %5) <{operandSegmentSizes = array<i32: 3, 1>}> : (tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
    %7 = "tensor.expand_shape"(%6) <{reassociation = [[0, 1], [2], [3]], static_output_shape = array<i64: 1, 2, 8, 8>}> : (tensor<2x8x8xf32>) -> tensor<1x2x8x8xf32>
    "func.return"(%7) : (tensor<1x2x8x8xf32>) -> ()
  }) : () -> ()
}) : () -> ()
