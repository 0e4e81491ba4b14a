"""The real CPU kernel library of the runtime tests
(test/unit/RuntimeTestKernel.cpp): it registers dice::k_5a0a5e00000000aa,
x -> (x * x, x.t()), and the module that calls it as an accepted kernel."""

from build_tree import BUILD_DIR

TEST_KERNEL_LIBRARY = BUILD_DIR / "test" / "unit" / "libdice-runtime-test-kernel.so"
SQUARE_T = "5a0a5e00000000aa"

# Format with fp=SQUARE_T and library=TEST_KERNEL_LIBRARY; dice-lower
# turns the call into one of the kernel's trampoline.
KERNEL_MODULE = """
dice.kernel @k_{fp} : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8x4xf32>)
    verdict #dice.verdict<accepted, kernel_ms = 0.1, baseline_ms = 0.2, speedup = 2.0>
    source "__global__ void square_t() {{}}" artifact "{library}"
func.func @forward(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8x4xf32>) {{
  %p:2 = dice.call @k_{fp}(%x) : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8x4xf32>)
  %e = tensor.empty() : tensor<4x8xf32>
  %n = linalg.negf ins(%p#0 : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %n, %p#1 : tensor<4x8xf32>, tensor<8x4xf32>
}}
"""
