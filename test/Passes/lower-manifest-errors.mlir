// A manifest that is not dice-lower's is never overwritten.
// RUN: rm -rf %t && mkdir -p %t/art
// RUN: echo '{"version": 1, "kernels": ' > %t/art/manifest.json
// RUN: cd %S && not dice-opt %s --dice-lower=artifacts=%t/art 2>&1 | FileCheck %s --check-prefix=CORRUPT
// RUN: echo '{"version": 7, "kernels": {}}' > %t/art/manifest.json
// RUN: cd %S && not dice-opt %s --dice-lower=artifacts=%t/art 2>&1 | FileCheck %s --check-prefix=VERSION
// RUN: FileCheck %s --check-prefix=KEPT < %t/art/manifest.json
// RUN: echo '{"version": 1, "kernels": {"k": {"operator": "o", "inputs": [], "results": [{"shape": [], "dtype": "f32"}]}}}' > %t/art/manifest.json
// RUN: cd %S && not dice-opt %s --dice-lower=artifacts=%t/art 2>&1 | FileCheck %s --check-prefix=BADFIELD

// CORRUPT: art/manifest.json:2:1: error: dice-lower: cannot merge into this manifest: malformed manifest: {{.*}}unexpected end of input
// VERSION: art/manifest.json:0:0: error: dice-lower: cannot merge into this manifest: not a version 1 DICE manifest
// BADFIELD: art/manifest.json:0:0: error: dice-lower: cannot merge into this manifest: kernels.k.results[0].dtype: must name a dtype
// KEPT: "version": 7

dice.kernel @k_3f9a0c1d2e4b5a69 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    verdict #dice.verdict<accepted, kernel_ms = 0.1, baseline_ms = 0.24, speedup = 2.4>
    source "__global__ void k() {}"
    artifact "Inputs/lower/k_3f9a0c1d2e4b5a69.so"
func.func @f(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %r = dice.call @k_3f9a0c1d2e4b5a69(%x, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
