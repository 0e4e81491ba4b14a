// RUN: dice-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// dice.kernel_request
//===----------------------------------------------------------------------===//

func.func @bad_fingerprint(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{fingerprint must be at least 8 lowercase hex digits, got 'K_XYZ'}}
  %r = dice.kernel_request "K_XYZ" level(1) (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    dice.yield %a : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @level_out_of_range(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{attribute 'level' failed to satisfy constraint: KernelBench level: 1 (single op), 2 (fusion) or 3 (whole model)}}
  %r = dice.kernel_request "0123456789abcdef" level(4) (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    dice.yield %a : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @level_zero(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{attribute 'level' failed to satisfy constraint: KernelBench level: 1 (single op), 2 (fusion) or 3 (whole model)}}
  %r = dice.kernel_request "0123456789abcdef" level(0) (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    dice.yield %a : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @argument_count(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{region has 1 arguments but the request has 2 operands}}
  %r = dice.kernel_request "0123456789abcdef" level(1) (%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    dice.yield %a : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @argument_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{region argument #0 has type 'tensor<4xf16>' but operand #0 has type 'tensor<4xf32>'}}
  %r = dice.kernel_request "0123456789abcdef" level(1) (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  // expected-note @+1 {{region argument declared here}}
  ^bb0(%a: tensor<4xf16>):
    %e = tensor.empty() : tensor<4xf32>
    dice.yield %e : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @wrong_terminator(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{region must end with 'dice.yield'}}
  %r = dice.kernel_request "0123456789abcdef" level(1) (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    llvm.unreachable
  }
  return %r : tensor<4xf32>
}

// -----

func.func @yield_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{yield returns 2 values but the request has 1 results}}
  %r = dice.kernel_request "0123456789abcdef" level(1) (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    // expected-note @+1 {{yield is here}}
    dice.yield %a, %a : tensor<4xf32>, tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @yield_type(%x: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{yield value #0 has type 'tensor<4xf32>' but result #0 has type 'tensor<8xf32>'}}
  %r = dice.kernel_request "0123456789abcdef" level(1) (%x) : (tensor<4xf32>) -> tensor<8xf32> {
  ^bb0(%a: tensor<4xf32>):
    // expected-note @+1 {{yield is here}}
    dice.yield %a : tensor<4xf32>
  }
  return %r : tensor<8xf32>
}

// -----

func.func @scalar_operand(%x: f32) {
  // expected-error @+1 {{operand #0 must be variadic of ranked tensor of any type values, but got 'f32'}}
  dice.kernel_request "0123456789abcdef" level(1) (%x) : (f32) -> () {
  ^bb0(%a: f32):
    dice.yield
  }
  return
}

// -----

func.func @two_blocks(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expects region #0 to have 0 or 1 blocks}}
  %r = dice.kernel_request "0123456789abcdef" level(1) (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    cf.br ^bb1
  ^bb1:
    dice.yield %a : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @captures_from_above(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-note @+1 {{required by region isolation constraints}}
  %r = dice.kernel_request "0123456789abcdef" level(1) () : () -> tensor<4xf32> {
    // expected-error @+1 {{using value defined outside the region}}
    dice.yield %x : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @yield_outside_request(%x: tensor<4xf32>) {
  // expected-error @+1 {{expects parent op 'dice.kernel_request'}}
  dice.yield %x : tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// #dice.scaffold
//===----------------------------------------------------------------------===//

// -----

func.func @empty_reference(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{scaffold has an empty reference program}}
  %r = dice.kernel_request "0123456789abcdef" level(1) (%x) : (tensor<4xf32>) -> tensor<4xf32>
      scaffold <program = "{\22inputs\22:[{\22shape\22:[4],\22dtype\22:\22float32\22}],\22ops\22:[],\22outputs\22:[0]}", reference = "", prefix = "", suffix = "void dice_forward();", signature = "void dice_forward();", infill_prompt = "", end_to_end_prompt = ""> {
  ^bb0(%a: tensor<4xf32>):
    dice.yield %a : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @signature_without_entry_point(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{scaffold signature must declare dice_forward, got 'torch::Tensor forward(torch::Tensor x);'}}
  %r = dice.kernel_request "0123456789abcdef" level(1) (%x) : (tensor<4xf32>) -> tensor<4xf32>
      scaffold <program = "{\22inputs\22:[{\22shape\22:[4],\22dtype\22:\22float32\22}],\22ops\22:[],\22outputs\22:[0]}", reference = "r", prefix = "", suffix = "torch::Tensor forward(torch::Tensor x);", signature = "torch::Tensor forward(torch::Tensor x);", infill_prompt = "", end_to_end_prompt = ""> {
  ^bb0(%a: tensor<4xf32>):
    dice.yield %a : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @suffix_disagrees_with_signature(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{scaffold suffix does not contain its signature 'torch::Tensor dice_forward(torch::Tensor x);'}}
  %r = dice.kernel_request "0123456789abcdef" level(1) (%x) : (tensor<4xf32>) -> tensor<4xf32>
      scaffold <program = "{\22inputs\22:[{\22shape\22:[4],\22dtype\22:\22float32\22}],\22ops\22:[],\22outputs\22:[0]}", reference = "r", prefix = "", suffix = "torch::Tensor dice_forward(torch::Tensor x, torch::Tensor y);", signature = "torch::Tensor dice_forward(torch::Tensor x);", infill_prompt = "", end_to_end_prompt = ""> {
  ^bb0(%a: tensor<4xf32>):
    dice.yield %a : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @program_not_json(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{scaffold program is not a reference program: line 1, column 1: syntax error while parsing value}}
  %r = dice.kernel_request "0123456789abcdef" level(1) (%x) : (tensor<4xf32>) -> tensor<4xf32>
      scaffold <program = "x0 = torch.relu(x0)", reference = "r", prefix = "", suffix = "void dice_forward();", signature = "void dice_forward();", infill_prompt = "", end_to_end_prompt = ""> {
  ^bb0(%a: tensor<4xf32>):
    dice.yield %a : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @program_with_unknown_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{scaffold program is not a reference program: ops[0].fn: unknown operation 'frobnicate'}}
  %r = dice.kernel_request "0123456789abcdef" level(1) (%x) : (tensor<4xf32>) -> tensor<4xf32>
      scaffold <program = "{\22inputs\22:[{\22shape\22:[4],\22dtype\22:\22float32\22}],\22ops\22:[{\22fn\22:\22frobnicate\22,\22args\22:[0],\22type\22:{\22shape\22:[4],\22dtype\22:\22float32\22}}],\22outputs\22:[1]}", reference = "r", prefix = "", suffix = "void dice_forward();", signature = "void dice_forward();", infill_prompt = "", end_to_end_prompt = ""> {
  ^bb0(%a: tensor<4xf32>):
    dice.yield %a : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @program_arity(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{scaffold program takes 1 inputs and returns 1 values, but the request has 2 operands and 1 results}}
  %r = dice.kernel_request "0123456789abcdef" level(1) (%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      scaffold <program = "{\22inputs\22:[{\22shape\22:[4],\22dtype\22:\22float32\22}],\22ops\22:[],\22outputs\22:[0]}", reference = "r", prefix = "", suffix = "void dice_forward();", signature = "void dice_forward();", infill_prompt = "", end_to_end_prompt = ""> {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    dice.yield %a : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// #dice.verdict
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{unknown verdict status 'approved'; expected one of accepted, slow, incorrect, deceptive, compile_error, crashed, unverified}}
dice.kernel @k_0123456789abcdef : () -> () verdict #dice.verdict<approved> source "x"

// -----

// expected-error @+1 {{duplicate or unknown struct parameter name: latency}}
dice.kernel @k_0123456789abcdef : () -> () verdict #dice.verdict<crashed, reason = "trap", latency = 1.0> source "x"

// -----

// expected-error @+1 {{duplicate or unknown struct parameter name: trials}}
dice.kernel @k_0123456789abcdef : () -> () verdict #dice.verdict<crashed, reason = "trap", trials = 1, trials = 2> source "x"

// -----

// expected-error @+1 {{verdict metric 'max_abs_err' must be non-negative, got -0.5}}
dice.kernel @k_0123456789abcdef : () -> () verdict #dice.verdict<incorrect, reason = "wrong", max_abs_err = -0.5> source "x"

// -----

// expected-error @+1 {{verdict metric 'max_rel_err' must be non-negative, got -inf}}
dice.kernel @k_0123456789abcdef : () -> () verdict #dice.verdict<incorrect, reason = "wrong", max_rel_err = -inf> source "x"

// -----

// Errors may be infinite or NaN; timings may not.
// expected-error @+1 {{verdict metric 'kernel_ms' must be finite and non-negative, got inf}}
dice.kernel @k_0123456789abcdef : () -> () verdict #dice.verdict<crashed, reason = "hung", kernel_ms = inf> source "x"

// -----

// expected-error @+1 {{verdict metric 'baseline_ms' must be finite and non-negative, got nan}}
dice.kernel @k_0123456789abcdef : () -> () verdict #dice.verdict<crashed, reason = "hung", baseline_ms = nan> source "x"

// -----

// expected-error @+1 {{accepted verdict needs a finite 'max_rel_err': its results matched the reference}}
dice.kernel @k_0123456789abcdef : () -> () verdict #dice.verdict<accepted, kernel_ms = 0.5, baseline_ms = 1.0, speedup = 2.0, max_rel_err = nan> source "x"

// -----

// expected-error @+2 {{expected a number, inf, -inf, nan or -nan, got 'infinity'}}
// expected-error @+1 {{failed to parse Dice_VerdictAttr parameter 'max_rel_err'}}
dice.kernel @k_0123456789abcdef : () -> () verdict #dice.verdict<incorrect, reason = "wrong", max_rel_err = infinity> source "x"

// -----

// expected-error @+1 {{verdict metric 'trials' must be non-negative, got -1}}
dice.kernel @k_0123456789abcdef : () -> () verdict #dice.verdict<crashed, reason = "trap", trials = -1> source "x"

// -----

// expected-error @+1 {{incorrect verdict needs a reason a user can act on}}
dice.kernel @k_0123456789abcdef : () -> () verdict #dice.verdict<incorrect, max_abs_err = 0.5> source "x"

// -----

// expected-error @+1 {{accepted verdict needs 'kernel_ms'}}
dice.kernel @k_0123456789abcdef : () -> () verdict #dice.verdict<accepted, baseline_ms = 1.0, speedup = 2.0> source "x"

// -----

// expected-error @+1 {{slow verdict needs a positive 'kernel_ms'}}
dice.kernel @k_0123456789abcdef : () -> () verdict #dice.verdict<slow, reason = "slow", kernel_ms = 0.0, baseline_ms = 1.0, speedup = 0.0> source "x"

// -----

// expected-error @+1 {{verdict speedup 3.0 does not match baseline_ms / kernel_ms = 2.0}}
dice.kernel @k_0123456789abcdef : () -> () verdict #dice.verdict<accepted, kernel_ms = 0.5, baseline_ms = 1.0, speedup = 3.0> source "x"

// -----

// expected-error @+1 {{compile_error verdict cannot carry 'kernel_ms': no candidate code ran}}
dice.kernel @k_0123456789abcdef : () -> () verdict #dice.verdict<compile_error, reason = "nvcc failed", kernel_ms = 0.5> source "x"

//===----------------------------------------------------------------------===//
// dice.kernel
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{symbol name must be 'k_' followed by the request fingerprint, got '@relu'}}
dice.kernel @relu : () -> () verdict #dice.verdict<accepted, kernel_ms = 1.0, baseline_ms = 1.0, speedup = 1.0> source "x"

// -----

// expected-error @+1 {{signature input #1 must be a ranked tensor, got 'i32'}}
dice.kernel @k_0123456789abcdef : (tensor<4xf32>, i32) -> () verdict #dice.verdict<accepted, kernel_ms = 1.0, baseline_ms = 1.0, speedup = 1.0> source "x"

// -----

// expected-error @+1 {{signature result #0 must be a ranked tensor, got 'tensor<*xf32>'}}
dice.kernel @k_0123456789abcdef : () -> tensor<*xf32> verdict #dice.verdict<accepted, kernel_ms = 1.0, baseline_ms = 1.0, speedup = 1.0> source "x"

// -----

// expected-error @+1 {{kernel source must not be empty}}
dice.kernel @k_0123456789abcdef : () -> () verdict #dice.verdict<accepted, kernel_ms = 1.0, baseline_ms = 1.0, speedup = 1.0> source "  "

// -----

// expected-error @+1 {{artifact path must not be empty when given}}
dice.kernel @k_0123456789abcdef : () -> () verdict #dice.verdict<accepted, kernel_ms = 1.0, baseline_ms = 1.0, speedup = 1.0> source "x" artifact ""

// -----

func.func @kernel_inside_function() {
  // expected-error @+1 {{expects parent op 'builtin.module'}}
  dice.kernel @k_0123456789abcdef : () -> () verdict #dice.verdict<accepted, kernel_ms = 1.0, baseline_ms = 1.0, speedup = 1.0> source "x"
  return
}

//===----------------------------------------------------------------------===//
// dice.call
//===----------------------------------------------------------------------===//

// -----

func.func @undefined_callee(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{calls '@k_0123456789abcdef', which is not defined in the enclosing module}}
  %r = dice.call @k_0123456789abcdef(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// expected-note @+1 {{callee defined here}}
func.func @k_0123456789abcdef(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

func.func @callee_not_a_kernel(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{callee '@k_0123456789abcdef' is a 'func.func', not a 'dice.kernel'}}
  %r = dice.call @k_0123456789abcdef(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// expected-note @+1 {{kernel defined here}}
dice.kernel @k_0123456789abcdef : (tensor<4xf32>) -> tensor<4xf32> verdict #dice.verdict<incorrect, reason = "wrong"> source "x"

func.func @callee_not_accepted(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{calls kernel '@k_0123456789abcdef' whose verdict is 'incorrect'; only accepted kernels may be called}}
  %r = dice.call @k_0123456789abcdef(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

dice.kernel @k_0123456789abcdef : (tensor<4xf32>) -> tensor<4xf32> verdict #dice.verdict<accepted, kernel_ms = 1.0, baseline_ms = 2.0, speedup = 2.0> source "x"

func.func @operand_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{has 2 operands but 1 kernel inputs}}
  %r = dice.call @k_0123456789abcdef(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

dice.kernel @k_0123456789abcdef : (tensor<4xf32>) -> tensor<4xf32> verdict #dice.verdict<accepted, kernel_ms = 1.0, baseline_ms = 2.0, speedup = 2.0> source "x"

func.func @operand_type(%x: tensor<4xf16>) -> tensor<4xf32> {
  // expected-error @+1 {{operand #0 has type 'tensor<4xf16>' but kernel input #0 has type 'tensor<4xf32>'}}
  %r = dice.call @k_0123456789abcdef(%x) : (tensor<4xf16>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

dice.kernel @k_0123456789abcdef : (tensor<4xf32>) -> tensor<4xf32> verdict #dice.verdict<accepted, kernel_ms = 1.0, baseline_ms = 2.0, speedup = 2.0> source "x"

func.func @result_type(%x: tensor<4xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{result #0 has type 'tensor<2x2xf32>' but kernel result #0 has type 'tensor<4xf32>'}}
  %r = dice.call @k_0123456789abcdef(%x) : (tensor<4xf32>) -> tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}

// -----

//===----------------------------------------------------------------------===//
// #dice.candidate and the request's candidates
//===----------------------------------------------------------------------===//

// expected-error @+1 {{candidate needs an answer or a source}}
func.func private @no_text() attributes {c = #dice.candidate<>}

// -----

// expected-error @+1 {{accepted candidate needs its source: its code ran}}
func.func private @accepted_without_source() attributes {c = #dice.candidate<answer = "x", verdict = <accepted, kernel_ms = 1.0, baseline_ms = 2.0, speedup = 2.0>>}

// -----

// expected-error @+1 {{candidate has an artifact but no verdict}}
func.func private @artifact_without_verdict() attributes {c = #dice.candidate<source = "x", artifact = "k.so">}

// -----

// expected-error @+1 {{candidate artifact path must not be empty when given}}
func.func private @empty_artifact() attributes {c = #dice.candidate<source = "x", verdict = <unverified, reason = "no GPU">, artifact = "">}

// -----

func.func @candidates_without_scaffold(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{has candidates but no scaffold}}
  %r = dice.kernel_request "0123456789abcdef" level(1) (%x) : (tensor<4xf32>) -> tensor<4xf32> model "replay:k.jsonl" gpu_arch "sm_90" candidates [#dice.candidate<source = "x">] {
  ^bb0(%a: tensor<4xf32>):
    dice.yield %a : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @candidates_without_model(%x: tensor<4xf16>) -> tensor<4xf16> {
  // expected-error @+1 {{has candidates but no model that wrote them}}
  %r = dice.kernel_request "0123456789abcdef" level(3) (%x) : (tensor<4xf16>) -> tensor<4xf16>
      scaffold <program = "{\22inputs\22:[{\22shape\22:[4],\22dtype\22:\22float16\22}],\22ops\22:[],\22outputs\22:[0]}", reference = "class Model(nn.Module): ...", prefix = "import torch\0A", suffix = "torch::Tensor dice_forward(torch::Tensor x);\0Aclass ModelNew: ...", signature = "torch::Tensor dice_forward(torch::Tensor x);", infill_prompt = "<|im_start|>user\0A...", end_to_end_prompt = "<|im_start|>user\0A...">
      gpu_arch "sm_90" candidates [#dice.candidate<source = "x">] {
  ^bb0(%a: tensor<4xf16>):
    dice.yield %a : tensor<4xf16>
  }
  return %r : tensor<4xf16>
}

// -----

func.func @bad_gpu_arch(%x: tensor<4xf16>) -> tensor<4xf16> {
  // expected-error @+1 {{gpu_arch must look like 'sm_90', got 'hopper'}}
  %r = dice.kernel_request "0123456789abcdef" level(3) (%x) : (tensor<4xf16>) -> tensor<4xf16>
      scaffold <program = "{\22inputs\22:[{\22shape\22:[4],\22dtype\22:\22float16\22}],\22ops\22:[],\22outputs\22:[0]}", reference = "class Model(nn.Module): ...", prefix = "import torch\0A", suffix = "torch::Tensor dice_forward(torch::Tensor x);\0Aclass ModelNew: ...", signature = "torch::Tensor dice_forward(torch::Tensor x);", infill_prompt = "<|im_start|>user\0A...", end_to_end_prompt = "<|im_start|>user\0A...">
      model "replay:k.jsonl" gpu_arch "hopper" candidates [#dice.candidate<source = "x">] {
  ^bb0(%a: tensor<4xf16>):
    dice.yield %a : tensor<4xf16>
  }
  return %r : tensor<4xf16>
}

// -----

func.func @origin_without_candidates(%x: tensor<4xf16>) -> tensor<4xf16> {
  // expected-error @+1 {{names a model and GPU architecture but has no candidates}}
  %r = dice.kernel_request "0123456789abcdef" level(3) (%x) : (tensor<4xf16>) -> tensor<4xf16>
      scaffold <program = "{\22inputs\22:[{\22shape\22:[4],\22dtype\22:\22float16\22}],\22ops\22:[],\22outputs\22:[0]}", reference = "class Model(nn.Module): ...", prefix = "import torch\0A", suffix = "torch::Tensor dice_forward(torch::Tensor x);\0Aclass ModelNew: ...", signature = "torch::Tensor dice_forward(torch::Tensor x);", infill_prompt = "<|im_start|>user\0A...", end_to_end_prompt = "<|im_start|>user\0A...">
      model "replay:k.jsonl" gpu_arch "sm_90" {
  ^bb0(%a: tensor<4xf16>):
    dice.yield %a : tensor<4xf16>
  }
  return %r : tensor<4xf16>
}

// -----

// The dialect's discardable attributes are checked; unknown ones are errors.
func.func @position_not_an_integer() {
  // expected-error @+1 {{'dice.position' must be an integer}}
  %c = arith.constant {dice.position = "first"} 1.0 : f32
  return
}

// -----

// expected-error @+1 {{'dice.library' must be a string}}
func.func @library_not_a_string() attributes {dice.library = 3 : i64} {
  return
}

// -----

func.func @unknown_dice_attribute() {
  // expected-error @+1 {{unknown dice attribute 'dice.where' (known: dice.position, dice.library, dice.example_shapes)}}
  %c = arith.constant {dice.where = 1 : i64} 1.0 : f32
  return
}
