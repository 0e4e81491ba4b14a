// Exported from test/torch_models/models.py:dynamic_layernorm by test/torch_models/export.py; do not edit.
#map = affine_map<()[s0] -> (s0 * 8)>
#map1 = affine_map<(d0, d1) -> (d0, d1)>
#map2 = affine_map<(d0, d1) -> (d0, 0)>
#map3 = affine_map<(d0, d1) -> (d1)>
module {
  func.func @dynamic_layernorm(%arg0: tensor<?x8x32xf32> {dice.example_shape = array<i64: 3, 8, 32>}) -> tensor<?x8x16xf32> {
    %c8 = arith.constant 8 : index
    %cst = arith.constant 0.000000e+00 : f64
    %cst_0 = arith.constant 0.000000e+00 : f32
    %cst_1 = arith.constant dense_resource<torch_tensor_16_torch.float32> : tensor<16xf32>
    %cst_2 = arith.constant dense_resource<torch_tensor_16_32_torch.float32> : tensor<16x32xf32>
    %cst_3 = arith.constant dense_resource<torch_tensor_32_torch.float32_1> : tensor<32xf32>
    %cst_4 = arith.constant dense_resource<torch_tensor_32_torch.float32> : tensor<32xf32>
    %cst_5 = arith.constant 1.000000e-05 : f64
    %cst_6 = arith.constant 3.200000e+01 : f64
    %cst_7 = arith.constant 3.200000e+01 : f32
    %c0 = arith.constant 0 : index
    %collapsed = tensor.collapse_shape %arg0 [[0, 1], [2]] : tensor<?x8x32xf32> into tensor<?x32xf32>
    %dim = tensor.dim %arg0, %c0 : tensor<?x8x32xf32>
    %0 = affine.apply #map()[%dim]
    %1 = tensor.empty(%0) : tensor<?x32xf64>
    %2 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%collapsed : tensor<?x32xf32>) outs(%1 : tensor<?x32xf64>) {
    ^bb0(%in: f32, %out: f64):
      %30 = arith.extf %in : f32 to f64
      linalg.yield %30 : f64
    } -> tensor<?x32xf64>
    %3 = tensor.empty(%0) : tensor<?x1xf64>
    %4 = linalg.fill ins(%cst : f64) outs(%3 : tensor<?x1xf64>) -> tensor<?x1xf64>
    %5 = linalg.generic {indexing_maps = [#map1, #map2], iterator_types = ["parallel", "reduction"]} ins(%2 : tensor<?x32xf64>) outs(%4 : tensor<?x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %30 = arith.addf %in, %out : f64
      linalg.yield %30 : f64
    } -> tensor<?x1xf64>
    %6 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%5 : tensor<?x1xf64>) outs(%3 : tensor<?x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %30 = arith.divf %in, %cst_6 : f64
      linalg.yield %30 : f64
    } -> tensor<?x1xf64>
    %7 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%2, %6 : tensor<?x32xf64>, tensor<?x1xf64>) outs(%1 : tensor<?x32xf64>) {
    ^bb0(%in: f64, %in_8: f64, %out: f64):
      %30 = arith.subf %in, %in_8 : f64
      linalg.yield %30 : f64
    } -> tensor<?x32xf64>
    %8 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%7, %7 : tensor<?x32xf64>, tensor<?x32xf64>) outs(%1 : tensor<?x32xf64>) {
    ^bb0(%in: f64, %in_8: f64, %out: f64):
      %30 = arith.mulf %in, %in_8 : f64
      linalg.yield %30 : f64
    } -> tensor<?x32xf64>
    %9 = linalg.generic {indexing_maps = [#map1, #map2], iterator_types = ["parallel", "reduction"]} ins(%8 : tensor<?x32xf64>) outs(%4 : tensor<?x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %30 = arith.addf %in, %out : f64
      linalg.yield %30 : f64
    } -> tensor<?x1xf64>
    %10 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%9 : tensor<?x1xf64>) outs(%3 : tensor<?x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %30 = arith.divf %in, %cst_6 : f64
      linalg.yield %30 : f64
    } -> tensor<?x1xf64>
    %11 = tensor.empty(%0) : tensor<?x1xf32>
    %12 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%10 : tensor<?x1xf64>) outs(%11 : tensor<?x1xf32>) {
    ^bb0(%in: f64, %out: f32):
      %30 = arith.truncf %in : f64 to f32
      linalg.yield %30 : f32
    } -> tensor<?x1xf32>
    %13 = linalg.fill ins(%cst_0 : f32) outs(%11 : tensor<?x1xf32>) -> tensor<?x1xf32>
    %14 = linalg.generic {indexing_maps = [#map1, #map2], iterator_types = ["parallel", "reduction"]} ins(%collapsed : tensor<?x32xf32>) outs(%13 : tensor<?x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %30 = arith.addf %in, %out : f32
      linalg.yield %30 : f32
    } -> tensor<?x1xf32>
    %15 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%14 : tensor<?x1xf32>) outs(%11 : tensor<?x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %30 = arith.divf %in, %cst_7 : f32
      linalg.yield %30 : f32
    } -> tensor<?x1xf32>
    %16 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%12 : tensor<?x1xf32>) outs(%11 : tensor<?x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %30 = arith.truncf %cst_5 : f64 to f32
      %31 = arith.addf %in, %30 : f32
      linalg.yield %31 : f32
    } -> tensor<?x1xf32>
    %17 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%16 : tensor<?x1xf32>) outs(%11 : tensor<?x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %30 = math.rsqrt %in : f32
      linalg.yield %30 : f32
    } -> tensor<?x1xf32>
    %18 = tensor.empty(%0) : tensor<?x32xf32>
    %19 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%collapsed, %15 : tensor<?x32xf32>, tensor<?x1xf32>) outs(%18 : tensor<?x32xf32>) {
    ^bb0(%in: f32, %in_8: f32, %out: f32):
      %30 = arith.subf %in, %in_8 : f32
      linalg.yield %30 : f32
    } -> tensor<?x32xf32>
    %20 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%19, %17 : tensor<?x32xf32>, tensor<?x1xf32>) outs(%18 : tensor<?x32xf32>) {
    ^bb0(%in: f32, %in_8: f32, %out: f32):
      %30 = arith.mulf %in, %in_8 : f32
      linalg.yield %30 : f32
    } -> tensor<?x32xf32>
    %21 = linalg.generic {indexing_maps = [#map1, #map3, #map1], iterator_types = ["parallel", "parallel"]} ins(%20, %cst_4 : tensor<?x32xf32>, tensor<32xf32>) outs(%18 : tensor<?x32xf32>) {
    ^bb0(%in: f32, %in_8: f32, %out: f32):
      %30 = arith.mulf %in, %in_8 : f32
      linalg.yield %30 : f32
    } -> tensor<?x32xf32>
    %22 = linalg.generic {indexing_maps = [#map1, #map3, #map1], iterator_types = ["parallel", "parallel"]} ins(%21, %cst_3 : tensor<?x32xf32>, tensor<32xf32>) outs(%18 : tensor<?x32xf32>) {
    ^bb0(%in: f32, %in_8: f32, %out: f32):
      %30 = arith.addf %in, %in_8 : f32
      linalg.yield %30 : f32
    } -> tensor<?x32xf32>
    %23 = tensor.empty() : tensor<32x16xf32>
    %transposed = linalg.transpose ins(%cst_2 : tensor<16x32xf32>) outs(%23 : tensor<32x16xf32>) permutation = [1, 0] 
    %24 = tensor.empty(%0) : tensor<?x16xf32>
    %25 = linalg.fill ins(%cst_0 : f32) outs(%24 : tensor<?x16xf32>) -> tensor<?x16xf32>
    %26 = linalg.matmul ins(%22, %transposed : tensor<?x32xf32>, tensor<32x16xf32>) outs(%25 : tensor<?x16xf32>) -> tensor<?x16xf32>
    %27 = linalg.generic {indexing_maps = [#map1, #map3, #map1], iterator_types = ["parallel", "parallel"]} ins(%26, %cst_1 : tensor<?x16xf32>, tensor<16xf32>) outs(%24 : tensor<?x16xf32>) {
    ^bb0(%in: f32, %in_8: f32, %out: f32):
      %30 = arith.addf %in, %in_8 : f32
      linalg.yield %30 : f32
    } -> tensor<?x16xf32>
    %28 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%27 : tensor<?x16xf32>) outs(%24 : tensor<?x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %30 = arith.cmpf ugt, %in, %cst_0 : f32
      %31 = arith.select %30, %in, %cst_0 : f32
      linalg.yield %31 : f32
    } -> tensor<?x16xf32>
    %29 = arith.divsi %0, %c8 : index
    %expanded = tensor.expand_shape %28 [[0, 1], [2]] output_shape [%29, 8, 16] : tensor<?x16xf32> into tensor<?x8x16xf32>
    return %expanded : tensor<?x8x16xf32>
  }
}

{-#
  dialect_resources: {
    builtin: {
      torch_tensor_16_torch.float32: "0x040000000AE648BD6AF786BD2849363DAE69803DBFE1B0BDB403803C79D0D13D2E1690BC7E5C5C3D55A32EBDF1C97D3D1D2103BEA0E3D4BD74C4B7BDD65B263E73D642BD",
      torch_tensor_16_32_torch.float32: "0x040000002279ADBA9C36C23DB1FC14BE1D3805BED6708BBDAB2A423D578A65BB40870F3EDE8380BC97993F3D5DD35ABD1B540EBDC2EF2CBE90C5EFBD9F3D95BD4C94D63B6B208F3D403BD93DDE70F5BD86A79DBDA77F833DF750163EE70315BD7A75073E1E6BE9BC353C993CA1E8233E20ED27BEC5EAE3BDAC4F37BD661F8DBD9E661C3E85AAEABD86A8A6BD53EFFCBD208929BE2D56D3BD979A1B3E5E8CA13D5F78AF3D4952183C7B9CB9BD6E01F53C4D0429BE68CC02BE4CA4BABD876CE43D5D45D43DF68FA0BDF202D1BBB38BE73D12F5333ECBAF8F3DA6A2C33CF2BDF23D522BD5BD70ED063D65580CBE8AECFABDF205BBBD10D0A33DFD98913D5B74D6BDB8BF5A3DC5BFC63D43C8B6BCCF2BDD3BAAC5273DAE99E03D4ED02D3E6D7F0BBE1CAD84BDE7488E3DC4FB153E3C861D3E40B91F3E171A103D49691DBE2838853C4B7EE2BDA4B328BE96D5203ECBA3093E649234BEEC86073DC6F4F3BC5C4FEEBCC7B9A5BD65398B3DD06FD6BD61B8843DFD15B73D2B96013ECB5E873D452933BE76DAEABD77C5B43DE58C173DD5350DBE0B78D0BD374B2A3EB8F2F33DA3DB9DBD3F3D36BD4D702CBE123C50BB775108BE67A10BBEE4951FBCEA6ED93C0B4494BD5DD3D63D8F50DCBD6440243EE51AF83D88A618BE253634BD67B0023C8F49D33C86BB2B3DFF128E3D4A7D2D3C2AA6B0BD0E50AB3D81A42DBE2E95D6BD184235BD975AB0BD714E7DBD0C5E14BEB0051ABDB5C61A3D16DBEBBD02A314BC3595013EE4DE94BC5DFDA03B86DC79BC2E8A123DCF32E63D4A782B3E30EAE53DB9DC2B3E447751BC129D22BE61A2ABBD9783F63DC23396BA33F3B3BD9DB70ABE466829BE24C818BE97DE12BD4F8BC63DA4BBC33DB0942EBE4ED5E13D3BA60DBED01319BDF9CB92BDE6770BBDD42A0EBD0C7022BE884C1CBE439BE2BC88D2153B0F77A4BD3361883D8FED22BEC47643BC22311F3E34AC93BD0576233E191D833DE55C23BE970FE53DEA1BA7BCD59DA1BDB1C0103EE64712BEE6649B3C619917BDA844013E4A1F4A3D26F6AD3DE2B67F3D4E1F2EBD044718BDB72C15BE252BC43DB3B90F3E42B7F73DCD5FFFBDD22C013CA236FFBDEB4BC7BD40F6D2BD2773773D5DBED7BDEDC17CBB42AFF33BE360E93D0ED608BE428BF8BDD038D2BD2867FD3DE62382BD11B0183E79EA823DC25FB73C487BACBA01230FBDD6B1B53CD65625BD4ACEA2BA43C6B83C21980DBE7FC1BDBDFB2B123ED8E712BE13F94FBC4312333E23C8823DB401A43B87DF1CBE9058B33DC4EF00BE288A4DBD95F072BD1474D6BCFF71FD3A5D4E153E33C9B43C4123223EAC76DD3DCAE2E4BD3660A23D78ECFFBDEB7099BDB3F7543DA9156F3D48CE073E8C1769BDF25E9439D362BA3DF80F2FBE9CDF023E5FB015BE6EAC1F3BE835F6BC0DADBEBD7367BF3C33B0153E76A953BDB2F0D6BD5DE585BDC16A33BE0D6CA33DC1DFADBD5D9AF1BD2C92D0BD0528D03DE5B9BF3DB1EF0A3EDE51833D0AD071BD92574ABD04EA553DDECD143EF8DE443D034CABBDAA2FAABDEF252BBE7A6F1C3D762BCBBD786421BE4ABB1E3EAA1CEBBD8BBEA4BC88714F3D0A8BB83BF59BF3BD655212BE8E49103ECCD0EB3C972D163E79BD72BDE947553D4A9425BD5CCD00BC5F7FDCBD35E2743DB7ED643DA5FC6EBBB8D822BDE22BDFBDAF5DFA3D52C106BE9350943D3B7973BD0DACAEBDB113023D4210BCBDB8D4263DE7310E3DAB6706BE9B1DF13CED339A3D5E4E8F3DB44AB6BCBD6514BE2A3DDFBC457A7B3D811984BD4C6C893DAD1AF13D000ABDBDD280E43ADFB3953DA901633CDDEE713C0ED3B43CD54E0EBEAA9D633C6BB3FA3D771E233EDFC9D43DA00EC23CC313A93DDB1FB0BD350216BE8FA91BBE2F96343E7BD1E53DDB40FABD1CA58D3D2FB3083E1AF3343E4A481E3ED43E0C3E5E0026BDE11B7EBD2FA0143E0CE1CA3D05DED9BD50BD223E0EECAE3D315CC53DD2EAE2BDD6BC4F3D96D57DBDCE700D3E784A02BD39F28C3DA99C003D33099A3DB90F76BD0A85B03D9DDFFCBD5789233DD2F3F4BD169532BE5E5E11BECBE80E3E36E0C33DCFD5293EB804113E93A821BE0311F7BD20FFE9BC9E1EEBBDFC65FB3D1EDA08BEA2A3B0BD98E12EBEBD8BCDBD63E2143E1E36143E9994013E1CC50B3EBFF5203ECF6839BD3A4C9F3D9046213ED3896F3DF3F5343EAAC6BB3D8C0FE13DE06B7DBD53B7AD3D0767A63C16EC2CBDB315CCBD5925CBBD794A0BBE2B0CF33D3AB1003E81D1A4BCB881D1BD2CE90B3E0C85E73D594B573C65EEAABD8D5D263E660D943D846B09BE21402D3E1A76093EB5F583BD8D85CB3DD6B4CDBD53F2E2BC28B4193E9258EF3B290500BEAF0272BD1B8C44BD03B20BBDDC968A3C7B69273EC5111B3C8389DFBDBF72143CC897AD3DF395B33DC77025BE739101BD068606BE077A9ABDAD70823D1C8C00BE5A94863D2FA5193ED3F63D3C584BF1BD88B681BDCD1C1E3D8AFE09BE53DDB33D8A5724BE3F032EBEADE32FBE85E312BD5C72F33DBC542BBE0076163EE1D290BD1C12543D8514043C853A23BEE51F163EF6EFC23DB4EE333E06E8B63D72F8EEBD6713173E17A91B3C48AFAB3D862511BE8B4350BD23BD31BEE8028DBDBE341C3D24210EBE58CF663D4658C23DCCBDC93CEA3BF2BD0D590CBED0635FBD7AEB9E3D8C8E323EC82ED03D5D13A3BC99DF7D3D639731BEDD9B1ABE1CEEA83D6F10CDBDDC2CAE3D2293FFBD5B52B3BD881A15BE30EDBC3D538F93BC0C500B3E3F0EE03DD754C83DA144BA3B68DE5FBDF56F1DBDEB75C03C4D77B33D00A4FDBDEFEC173E3D759DBC32AF17BE44E2C3BD4B2B203E0F8C253EAEAC27BE6358FF3D6370B53D214CD63DF83C193EF01EC3BD64A5643D8328943DC6F555BD9450723DA65350BDA2D5DF3D",
      torch_tensor_32_torch.float32_1: "0x040000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
      torch_tensor_32_torch.float32: "0x040000000000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F"
    }
  }
#-}
