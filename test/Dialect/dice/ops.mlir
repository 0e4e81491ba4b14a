// RUN: dice-opt %s | dice-opt | FileCheck %s
// RUN: dice-opt %s --mlir-print-op-generic | dice-opt | FileCheck %s

// A fusion request: matmul with a bias-add + relu epilogue; the weight and
// bias became operands, so the region reads nothing from above.
// CHECK-LABEL: func.func @request
// CHECK: %[[R:.*]] = dice.kernel_request "3f9a0c1d2e4b5a69" level(2) (%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<8x16xf32>, tensor<16x4xf32>, tensor<4xf32>) -> tensor<8x4xf32> {
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<8x16xf32>, %{{.*}}: tensor<16x4xf32>, %{{.*}}: tensor<4xf32>):
// CHECK: linalg.matmul
// CHECK: linalg.generic
// CHECK: dice.yield %{{.*}} : tensor<8x4xf32>
// CHECK: return %[[R]]
func.func @request(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>, %b: tensor<4xf32>) -> tensor<8x4xf32> {
  %r = dice.kernel_request "3f9a0c1d2e4b5a69" level(2) (%x, %w, %b) : (tensor<8x16xf32>, tensor<16x4xf32>, tensor<4xf32>) -> tensor<8x4xf32> {
  ^bb0(%a0: tensor<8x16xf32>, %a1: tensor<16x4xf32>, %a2: tensor<4xf32>):
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8x4xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
    %m = linalg.matmul ins(%a0, %a1 : tensor<8x16xf32>, tensor<16x4xf32>) outs(%z : tensor<8x4xf32>) -> tensor<8x4xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%m, %a2 : tensor<8x4xf32>, tensor<4xf32>) outs(%e : tensor<8x4xf32>) {
    ^bb0(%v: f32, %bias: f32, %out: f32):
      %s = arith.addf %v, %bias : f32
      %relu = arith.maximumf %s, %zero : f32
      linalg.yield %relu : f32
    } -> tensor<8x4xf32>
    dice.yield %y : tensor<8x4xf32>
  }
  return %r : tensor<8x4xf32>
}

// Several results, no operands.
// CHECK-LABEL: func.func @multi_result
// CHECK: dice.kernel_request "00000000deadbeef" level(1) () : () -> (tensor<2xf32>, tensor<3xi64>)
// CHECK: dice.yield %{{.*}}, %{{.*}} : tensor<2xf32>, tensor<3xi64>
func.func @multi_result() -> (tensor<2xf32>, tensor<3xi64>) {
  %r:2 = dice.kernel_request "00000000deadbeef" level(1) () : () -> (tensor<2xf32>, tensor<3xi64>) {
    %a = tensor.empty() : tensor<2xf32>
    %b = tensor.empty() : tensor<3xi64>
    dice.yield %a, %b : tensor<2xf32>, tensor<3xi64>
  }
  return %r#0, %r#1 : tensor<2xf32>, tensor<3xi64>
}

// A scaffolded whole-model request.
// CHECK-LABEL: func.func @scaffolded
// CHECK: dice.kernel_request "0123456789abcdef" level(3) (%{{.*}}) : (tensor<4xf16>) -> tensor<4xf16> scaffold <program = "{\22inputs\22:[{\22shape\22:[4],\22dtype\22:\22float16\22}],\22ops\22:[],\22outputs\22:[0]}", reference = "class Model(nn.Module): ...", prefix = "import torch\0A", suffix = "torch::Tensor dice_forward(torch::Tensor x);\0Aclass ModelNew: ...", signature = "torch::Tensor dice_forward(torch::Tensor x);", infill_prompt = "<|im_start|>user\0A...", end_to_end_prompt = "<|im_start|>user\0A..."> {
func.func @scaffolded(%x: tensor<4xf16>) -> tensor<4xf16> {
  %r = dice.kernel_request "0123456789abcdef" level(3) (%x) : (tensor<4xf16>) -> tensor<4xf16>
      scaffold #dice.scaffold<program = "{\22inputs\22:[{\22shape\22:[4],\22dtype\22:\22float16\22}],\22ops\22:[],\22outputs\22:[0]}", reference = "class Model(nn.Module): ...", prefix = "import torch\n", suffix = "torch::Tensor dice_forward(torch::Tensor x);\nclass ModelNew: ...", signature = "torch::Tensor dice_forward(torch::Tensor x);", infill_prompt = "<|im_start|>user\n...", end_to_end_prompt = "<|im_start|>user\n..."> {
  ^bb0(%a: tensor<4xf16>):
    dice.yield %a : tensor<4xf16>
  }
  return %r : tensor<4xf16>
}

// An accepted kernel and its call.
// CHECK: dice.kernel @k_0123456789abcdef : (tensor<4xf32>) -> tensor<4xf32> verdict <accepted, reason = "fastest of 8 candidates", baseline_ms = 0.024, kernel_ms = 0.01, speedup = 2.4, trials = 5> source "__global__ void relu(float *x) {}" artifact "kernels/k_0123456789abcdef.so"
dice.kernel @k_0123456789abcdef : (tensor<4xf32>) -> tensor<4xf32>
    verdict #dice.verdict<accepted, reason = "fastest of 8 candidates", kernel_ms = 0.01, baseline_ms = 0.024, speedup = 2.4, trials = 5>
    source "__global__ void relu(float *x) {}"
    artifact "kernels/k_0123456789abcdef.so"

// CHECK-LABEL: func.func @call
// CHECK: %[[C:.*]] = dice.call @k_0123456789abcdef(%{{.*}}) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: return %[[C]]
func.func @call(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = dice.call @k_0123456789abcdef(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %c : tensor<4xf32>
}

// A kernel that was not accepted may be kept (for the record) without an
// artifact; every status round-trips.
// CHECK: dice.kernel @k_aaaaaaaaaaaaaaaa {{.*}} verdict <slow, reason = "1.2x, below min_speedup 1.5", baseline_ms = 1.2, kernel_ms = 1.0, speedup = 1.2>
dice.kernel @k_aaaaaaaaaaaaaaaa : () -> () verdict #dice.verdict<slow, reason = "1.2x, below min_speedup 1.5", kernel_ms = 1.0, baseline_ms = 1.2, speedup = 1.2> source "x"
// CHECK: dice.kernel @k_bbbbbbbbbbbbbbbb {{.*}} verdict <incorrect, reason = "output 0 differs", max_abs_err = 0.5, max_rel_err = 0.31>
dice.kernel @k_bbbbbbbbbbbbbbbb : () -> () verdict #dice.verdict<incorrect, reason = "output 0 differs", max_rel_err = 0.31, max_abs_err = 0.5> source "x"
// CHECK: dice.kernel @k_cccccccccccccccc {{.*}} verdict <deceptive, reason = "calls at::matmul (line 12)">
dice.kernel @k_cccccccccccccccc : () -> () verdict #dice.verdict<deceptive, reason = "calls at::matmul (line 12)"> source "x"
// CHECK: dice.kernel @k_dddddddddddddddd {{.*}} verdict <compile_error, reason = "nvcc: expected ';'", compile_ms = 812.5>
dice.kernel @k_dddddddddddddddd : () -> () verdict #dice.verdict<compile_error, reason = "nvcc: expected ';'", compile_ms = 812.5> source "x"
// CHECK: dice.kernel @k_eeeeeeeeeeeeeeee {{.*}} verdict <crashed, reason = "illegal memory access">
dice.kernel @k_eeeeeeeeeeeeeeee : () -> () verdict #dice.verdict<crashed, reason = "illegal memory access"> source "x"
// CHECK: dice.kernel @k_ffffffffffffffff {{.*}} verdict <unverified, reason = "no CUDA device">
dice.kernel @k_ffffffffffffffff : () -> () verdict #dice.verdict<unverified, reason = "no CUDA device"> source "x"

// -----

// An infilled and verified request: where its candidates came from and each
// candidate's source, verdict and artifact round-trip.

// CHECK-LABEL: func.func @infilled
// CHECK: model "replay:k.jsonl" gpu_arch "sm_90a" candidates [#dice.candidate<answer = "no code here">, #dice.candidate<answer = "source = ...", source = "__global__ void k() {}", verdict = <accepted, baseline_ms = 0.2, kernel_ms = 0.1, speedup = 2.0>, artifact = "lib.so">, #dice.candidate<source = "__global__ void j() {}", verdict = <incorrect, reason = "max relative error 1">>] {
func.func @infilled(%x: tensor<4xf16>) -> tensor<4xf16> {
  %r = dice.kernel_request "0123456789abcdef" level(3) (%x) : (tensor<4xf16>) -> tensor<4xf16>
      scaffold <program = "{\22inputs\22:[{\22shape\22:[4],\22dtype\22:\22float16\22}],\22ops\22:[],\22outputs\22:[0]}", reference = "class Model(nn.Module): ...", prefix = "import torch\0A", suffix = "torch::Tensor dice_forward(torch::Tensor x);\0Aclass ModelNew: ...", signature = "torch::Tensor dice_forward(torch::Tensor x);", infill_prompt = "<|im_start|>user\0A...", end_to_end_prompt = "<|im_start|>user\0A...">
      model "replay:k.jsonl" gpu_arch "sm_90a" candidates [
        #dice.candidate<answer = "no code here">,
        #dice.candidate<answer = "source = ...", source = "__global__ void k() {}", verdict = #dice.verdict<accepted, kernel_ms = 0.1, baseline_ms = 0.2, speedup = 2.0>, artifact = "lib.so">,
        #dice.candidate<source = "__global__ void j() {}", verdict = #dice.verdict<incorrect, reason = "max relative error 1">>] {
  ^bb0(%a: tensor<4xf16>):
    dice.yield %a : tensor<4xf16>
  }
  return %r : tensor<4xf16>
}
