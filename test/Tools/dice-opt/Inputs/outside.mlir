#id = affine_map<(d0, d1) -> (d0, d1)>

// A dynamic size that no operand has: the op stays outside kernel
// requests, with a remark (docs/passes.md, dice-outline).
func.func @dynamic_shape(%n: index) -> tensor<?x4xf32> {
  %e = tensor.empty(%n) : tensor<?x4xf32>
  %r = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<?x4xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 1 : index
    %c = arith.index_cast %i : index to i64
    %y = arith.sitofp %c : i64 to f32
    linalg.yield %y : f32
  } -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}
