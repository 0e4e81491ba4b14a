// RUN: dice-opt %s -split-input-file -verify-diagnostics --dice-scaffold | FileCheck %s

// A single-result request: the program, the KernelBench reference, the
// prefix, the suffix with the exact dice_forward declaration, both prompts.

#id = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-LABEL: func.func @single_result
// CHECK: dice.kernel_request "1111111111111111" level(1) (%{{.*}}, %{{.*}}) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> scaffold <
// CHECK-SAME: program = "{\22inputs\22:[{\22dtype\22:\22float32\22,\22shape\22:[2,3]},{\22dtype\22:\22float32\22,\22shape\22:[2,3]}],\22ops\22:[{\22args\22:[0,1],\22fn\22:\22mul\22,\22type\22:{\22dtype\22:\22float32\22,\22shape\22:[2,3]}}],\22outputs\22:[2]}"
// CHECK-SAME: reference = "import torch\0Aimport torch.nn as nn\0A\0A\0Aclass Model(nn.Module):\0A    def __init__(self):\0A        super().__init__()\0A\0A    def forward(self, x0, x1):\0A        t2 = torch.mul(x0, x1)\0A        return t2\0A
// CHECK-SAME: prefix = "import torch\0Aimport torch.nn as nn\0Afrom torch.utils.cpp_extension import load_inline\0A\0A"
// CHECK-SAME: suffix = "\0A\0Acpp_source = \22torch::Tensor dice_forward(torch::Tensor x0, torch::Tensor x1);\22\0A
// CHECK-SAME: name=\22dice_k_1111111111111111\22
// CHECK-SAME: return dice_module.dice_forward(x0, x1)\0A"
// CHECK-SAME: signature = "torch::Tensor dice_forward(torch::Tensor x0, torch::Tensor x1);"
// CHECK-SAME: infill_prompt = "<|im_start|>user\0A
// CHECK-SAME: Prefix:\0A```python\0Aimport torch
// CHECK-SAME: <|im_end|>\0A<|im_start|>assistant\0A"
// CHECK-SAME: end_to_end_prompt = "<|im_start|>user\0A
// CHECK-NOT: Prefix:
// CHECK-SAME: <|im_end|>\0A<|im_start|>assistant\0A"> {
func.func @single_result(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = dice.kernel_request "1111111111111111" level(1) (%x, %y) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>):
    %e = tensor.empty() : tensor<2x3xf32>
    %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<2x3xf32>, tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
    ^bb0(%p: f32, %q: f32, %o: f32):
      %v = arith.mulf %p, %q : f32
      linalg.yield %v : f32
    } -> tensor<2x3xf32>
    dice.yield %m : tensor<2x3xf32>
  }
  return %r : tensor<2x3xf32>
}

// -----

// Several results: dice_forward returns a vector, ModelNew a tuple.

// CHECK-LABEL: func.func @two_results
// CHECK: scaffold <
// CHECK-SAME: return t1, t2\0A
// CHECK-SAME: return tuple(dice_module.dice_forward(x0))\0A"
// CHECK-SAME: signature = "std::vector<torch::Tensor> dice_forward(torch::Tensor x0);"
func.func @two_results(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %r:2 = dice.kernel_request "2222222222222222" level(1) (%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %e = tensor.empty() : tensor<4xf32>
    %m:2 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e, %e : tensor<4xf32>, tensor<4xf32>) {
    ^bb0(%p: f32, %o1: f32, %o2: f32):
      %n = arith.negf %p : f32
      %ex = math.exp %p : f32
      linalg.yield %n, %ex : f32, f32
    } -> (tensor<4xf32>, tensor<4xf32>)
    dice.yield %m#0, %m#1 : tensor<4xf32>, tensor<4xf32>
  }
  return %r#0, %r#1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// A hand-written request the reference program cannot express is an error.

func.func @unrenderable(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'dice.kernel_request' op cannot render its reference program: 'linalg.generic' has a payload op 'math.ctpop' with no exact torch equivalent}}
  %r = dice.kernel_request "3333333333333333" level(1) (%x) : (tensor<4xi32>) -> tensor<4xi32> {
  ^bb0(%a: tensor<4xi32>):
    %e = tensor.empty() : tensor<4xi32>
    %m = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<4xi32>) outs(%e : tensor<4xi32>) {
    ^bb0(%p: i32, %o: i32):
      %v = math.ctpop %p : i32
      linalg.yield %v : i32
    } -> tensor<4xi32>
    dice.yield %m : tensor<4xi32>
  }
  return %r : tensor<4xi32>
}
