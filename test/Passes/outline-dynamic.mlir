// RUN: dice-opt %s -split-input-file --dice-outline=granularity=fusion --dice-scaffold | FileCheck %s

// Dynamic dimensions: a request's tensor.empty is sized inside the request
// from an operand of the same size (whatever size the function's empty was
// made with), and the reference program carries the size as a symbol whose
// example is the function argument's `dice.example_shape`. The function's
// own tensor.empty stays for dice-resolve to restore.

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func @rows
// CHECK: tensor.empty(%arg1) {{.*}}: tensor<?x4xf32>
// CHECK: dice.kernel_request "{{[0-9a-f]+}}" level(2) (%arg0) : (tensor<?x4xf32>) -> tensor<?xf32>
// CHECK-SAME: \22inputs\22:[{\22dtype\22:\22float32\22,\22shape\22:[\22s0\22,4]}]
// CHECK-SAME: \22symbols\22:[{\22example\22:6}]
// CHECK-SAME: torch.exp(x0)
// CHECK-SAME: torch.sum(
// CHECK-SAME: return [torch.randn((6, 4), dtype=torch.float32)]
// CHECK-SAME: dice.example_shapes = [array<i64: 6, 4>]
// CHECK: ^bb0(%[[X:.*]]: tensor<?x4xf32>):
// CHECK: %[[N:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x4xf32>
// CHECK: tensor.empty(%[[N]]) {{.*}}: tensor<?x4xf32>
// CHECK: tensor.empty(%{{.*}}) {{.*}}: tensor<?xf32>
func.func @rows(%x: tensor<?x4xf32> {dice.example_shape = array<i64: 6, 4>}, %n: index) -> tensor<?xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%n) : tensor<?x4xf32>
  %exp = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x4xf32>) outs(%e : tensor<?x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %y = math.exp %a : f32
    linalg.yield %y : f32
  } -> tensor<?x4xf32>
  %r0 = tensor.empty(%n) : tensor<?xf32>
  %r1 = linalg.fill ins(%zero : f32) outs(%r0 : tensor<?xf32>) -> tensor<?xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%exp : tensor<?x4xf32>) outs(%r1 : tensor<?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %sum : tensor<?xf32>
}

// -----

// A flattened dynamic dimension is a multiple of the batch symbol.
// CHECK-LABEL: func.func @flatten
// CHECK: dice.kernel_request
// CHECK-SAME: \22symbols\22:[{\22example\22:2},{\22base\22:0,\22example\22:6,\22factor\22:3}]
// CHECK-SAME: x0.reshape(x0.shape[0] * 3,)
func.func @flatten(%x: tensor<?x3xf32> {dice.example_shape = array<i64: 2, 3>}) -> tensor<?xf32> {
  %flat = tensor.collapse_shape %x [[0, 1]] : tensor<?x3xf32> into tensor<?xf32>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %flat, %c0 : tensor<?xf32>
  %e = tensor.empty(%n) : tensor<?xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%flat : tensor<?xf32>) outs(%e : tensor<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %y = math.tanh %a : f32
    linalg.yield %y : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A slice of a dynamic batch, sized with the batch (as chunk and GLU
// export): the slice's size is the batch symbol.
// CHECK-LABEL: func.func @halves
// CHECK: dice.kernel_request
// CHECK-SAME: x0[0:x0.shape[0], 0:4]
// CHECK-SAME: x0[0:x0.shape[0], 4:8]
func.func @halves(%x: tensor<?x8xf32> {dice.example_shape = array<i64: 5, 8>}) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %a = tensor.extract_slice %x[0, 0] [%n, 4] [1, 1] : tensor<?x8xf32> to tensor<?x4xf32>
  %b = tensor.extract_slice %x[0, 4] [%n, 4] [1, 1] : tensor<?x8xf32> to tensor<?x4xf32>
  %e = tensor.empty(%n) : tensor<?x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<?x4xf32>, tensor<?x4xf32>) outs(%e : tensor<?x4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.mulf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}
