// Exported from test/torch_models/models.py:layernorm by test/torch_models/export.py; do not edit.
#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#map2 = affine_map<(d0, d1, d2) -> (d2)>
module {
  func.func @layernorm(%arg0: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
    %cst = arith.constant 0.000000e+00 : f64
    %cst_0 = arith.constant 0.000000e+00 : f32
    %cst_1 = arith.constant dense_resource<torch_tensor_32_torch.float32_1> : tensor<32xf32>
    %cst_2 = arith.constant dense_resource<torch_tensor_32_torch.float32> : tensor<32xf32>
    %cst_3 = arith.constant 1.000000e-05 : f64
    %cst_4 = arith.constant 3.200000e+01 : f64
    %cst_5 = arith.constant 3.200000e+01 : f32
    %0 = tensor.empty() : tensor<2x8x32xf64>
    %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0 : tensor<2x8x32xf32>) outs(%0 : tensor<2x8x32xf64>) {
    ^bb0(%in: f32, %out: f64):
      %22 = arith.extf %in : f32 to f64
      linalg.yield %22 : f64
    } -> tensor<2x8x32xf64>
    %2 = tensor.empty() : tensor<2x8x1xf64>
    %3 = linalg.fill ins(%cst : f64) outs(%2 : tensor<2x8x1xf64>) -> tensor<2x8x1xf64>
    %4 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%1 : tensor<2x8x32xf64>) outs(%3 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %22 = arith.addf %in, %out : f64
      linalg.yield %22 : f64
    } -> tensor<2x8x1xf64>
    %5 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%4 : tensor<2x8x1xf64>) outs(%2 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %22 = arith.divf %in, %cst_4 : f64
      linalg.yield %22 : f64
    } -> tensor<2x8x1xf64>
    %6 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%1, %5 : tensor<2x8x32xf64>, tensor<2x8x1xf64>) outs(%0 : tensor<2x8x32xf64>) {
    ^bb0(%in: f64, %in_6: f64, %out: f64):
      %22 = arith.subf %in, %in_6 : f64
      linalg.yield %22 : f64
    } -> tensor<2x8x32xf64>
    %7 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%6, %6 : tensor<2x8x32xf64>, tensor<2x8x32xf64>) outs(%0 : tensor<2x8x32xf64>) {
    ^bb0(%in: f64, %in_6: f64, %out: f64):
      %22 = arith.mulf %in, %in_6 : f64
      linalg.yield %22 : f64
    } -> tensor<2x8x32xf64>
    %8 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%7 : tensor<2x8x32xf64>) outs(%3 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %22 = arith.addf %in, %out : f64
      linalg.yield %22 : f64
    } -> tensor<2x8x1xf64>
    %9 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%8 : tensor<2x8x1xf64>) outs(%2 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %22 = arith.divf %in, %cst_4 : f64
      linalg.yield %22 : f64
    } -> tensor<2x8x1xf64>
    %10 = tensor.empty() : tensor<2x8x1xf32>
    %11 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%9 : tensor<2x8x1xf64>) outs(%10 : tensor<2x8x1xf32>) {
    ^bb0(%in: f64, %out: f32):
      %22 = arith.truncf %in : f64 to f32
      linalg.yield %22 : f32
    } -> tensor<2x8x1xf32>
    %12 = linalg.fill ins(%cst_0 : f32) outs(%10 : tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
    %13 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0 : tensor<2x8x32xf32>) outs(%12 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %22 = arith.addf %in, %out : f32
      linalg.yield %22 : f32
    } -> tensor<2x8x1xf32>
    %14 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%13 : tensor<2x8x1xf32>) outs(%10 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %22 = arith.divf %in, %cst_5 : f32
      linalg.yield %22 : f32
    } -> tensor<2x8x1xf32>
    %15 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%11 : tensor<2x8x1xf32>) outs(%10 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %22 = arith.truncf %cst_3 : f64 to f32
      %23 = arith.addf %in, %22 : f32
      linalg.yield %23 : f32
    } -> tensor<2x8x1xf32>
    %16 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%15 : tensor<2x8x1xf32>) outs(%10 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %22 = math.rsqrt %in : f32
      linalg.yield %22 : f32
    } -> tensor<2x8x1xf32>
    %17 = tensor.empty() : tensor<2x8x32xf32>
    %18 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0, %14 : tensor<2x8x32xf32>, tensor<2x8x1xf32>) outs(%17 : tensor<2x8x32xf32>) {
    ^bb0(%in: f32, %in_6: f32, %out: f32):
      %22 = arith.subf %in, %in_6 : f32
      linalg.yield %22 : f32
    } -> tensor<2x8x32xf32>
    %19 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%18, %16 : tensor<2x8x32xf32>, tensor<2x8x1xf32>) outs(%17 : tensor<2x8x32xf32>) {
    ^bb0(%in: f32, %in_6: f32, %out: f32):
      %22 = arith.mulf %in, %in_6 : f32
      linalg.yield %22 : f32
    } -> tensor<2x8x32xf32>
    %20 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%19, %cst_2 : tensor<2x8x32xf32>, tensor<32xf32>) outs(%17 : tensor<2x8x32xf32>) {
    ^bb0(%in: f32, %in_6: f32, %out: f32):
      %22 = arith.mulf %in, %in_6 : f32
      linalg.yield %22 : f32
    } -> tensor<2x8x32xf32>
    %21 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%20, %cst_1 : tensor<2x8x32xf32>, tensor<32xf32>) outs(%17 : tensor<2x8x32xf32>) {
    ^bb0(%in: f32, %in_6: f32, %out: f32):
      %22 = arith.addf %in, %in_6 : f32
      linalg.yield %22 : f32
    } -> tensor<2x8x32xf32>
    return %21 : tensor<2x8x32xf32>
  }
}

{-#
  dialect_resources: {
    builtin: {
      torch_tensor_32_torch.float32_1: "0x040000001AEFA5BEC0B06BBE1ADAB2BE76C2EFBE047095BE9E0EDC3EBC76643E0027783E406AD73C3A3F83BEC03EAD3D9E06EFBE1AFAB8BEC6F983BE2685A13E2619963EC81163BE20CB93BC40BAA33E827FFE3E24344B3EC8558A3DFEA4AB3EC0BB96BEF8D0BE3D6C7AC6BE186EB1BED23E84BE8CAA673EF8E74D3E6AA497BEC8AD1A3E",
      torch_tensor_32_torch.float32: "0x04000000AC0A7F3F1855A23F75A6163FC0CC213F43B34E3F7E29913FC3767D3FB4BEB23F09A4743F6AEF903F1551593FF2D6663F24B7053F573A2B3F463C4B3FEC5E823F2C4D993FC666A63F3A39293FC142483FF33E973F1425B53F57A8653F57E4AF3F585E6B3FA8C5863F52F3B93F1942093F4D6B2F3F48985F3F091B4E3FCA4BB73F"
    }
  }
#-}
