// dice-resolve on candidates and verdicts written by hand, without the
// passes before it (the scaffolds are placeholders: resolve does not read
// them): the fastest accepted candidate at or above min-speedup
// becomes the kernel; a request whose candidates are slow or wrong keeps its
// ops, with a remark that says why. Hand-written verdicts have no database
// record, so the choice is not remembered (a warning), and nothing fails.

// RUN: rm -rf %t && mkdir -p %t
// RUN: dice-opt %s --dice-resolve="db=%t/k.db min-speedup=1.5 report=%t/report.txt" \
// RUN:   -mlir-print-op-on-diagnostic=false -o %t/out.mlir 2>%t/remarks.txt
// RUN: FileCheck %s < %t/out.mlir
// RUN: FileCheck %s --check-prefix=REMARKS < %t/remarks.txt
// RUN: FileCheck %s --check-prefix=REPORT < %t/report.txt

// CHECK: dice.kernel @k_1111111111111111 : (tensor<4xf32>) -> tensor<4xf32> verdict <accepted, baseline_ms = 0.3, kernel_ms = 0.1, speedup = 3.0> source "// the faster one" artifact "fast.so"
// CHECK-NOT: dice.kernel @

// REMARKS: warning: choice not recorded in kernel database {{.*}}k.db: cannot choose candidate {{.*}} of 1111111111111111: no such candidate under its key
// REMARKS: remark: using kernel @k_1111111111111111: candidate 2 of 3 accepted, 3.00x over the eager baseline
// REMARKS: remark: falling back to the original ops: fastest correct candidate is 1.20x, below min_speedup 1.50x
// REMARKS: remark: falling back to the original ops: all candidates incorrect (1), deceptive (1)

// REPORT: 111111111111 {{.*}} @k_1111111111111111 3.00x
// REPORT: 222222222222 {{.*}} fallback: fastest correct candidate is 1.20x, below min_speedup 1.50x
// REPORT: 333333333333 {{.*}} fallback: all candidates incorrect (1), deceptive (1)
// REPORT: total: requests: 3, candidates: 6, kernels used: 1, fallbacks: 2

#id = affine_map<(i) -> (i)>

// CHECK-LABEL: func.func @chosen
// CHECK-NEXT: %[[R:.*]] = dice.call @k_1111111111111111(%{{.*}}) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: return %[[R]]
func.func @chosen(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = dice.kernel_request "1111111111111111" level(1) (%x) : (tensor<4xf32>) -> tensor<4xf32>
      scaffold <program = "{\22inputs\22:[{\22dtype\22:\22float32\22,\22shape\22:[4]}],\22ops\22:[],\22outputs\22:[0]}", reference = "by hand", prefix = "by hand", suffix = "torch::Tensor dice_forward(torch::Tensor x0);", signature = "torch::Tensor dice_forward(torch::Tensor x0);", infill_prompt = "by hand", end_to_end_prompt = "by hand">
      model "replay:k.jsonl" gpu_arch "sm_90" candidates [
        #dice.candidate<source = "// accepted but slower", verdict = <accepted, kernel_ms = 0.1, baseline_ms = 0.2, speedup = 2.0>, artifact = "slow.so">,
        #dice.candidate<source = "// the faster one", verdict = <accepted, kernel_ms = 0.1, baseline_ms = 0.3, speedup = 3.0>, artifact = "fast.so">,
        #dice.candidate<source = "// faster still, and wrong", verdict = <incorrect, reason = "output 0 differs">>] {
  ^bb0(%a: tensor<4xf32>):
    %e = tensor.empty() : tensor<4xf32>
    %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%v: f32, %o: f32):
      %n = arith.negf %v : f32
      linalg.yield %n : f32
    } -> tensor<4xf32>
    dice.yield %y : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// CHECK-LABEL: func.func @too_slow
// CHECK-NEXT: tensor.empty
// CHECK-NEXT: linalg.generic
// CHECK: math.exp
// CHECK-NOT: dice.
func.func @too_slow(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = dice.kernel_request "2222222222222222" level(1) (%x) : (tensor<4xf32>) -> tensor<4xf32>
      scaffold <program = "{\22inputs\22:[{\22dtype\22:\22float32\22,\22shape\22:[4]}],\22ops\22:[],\22outputs\22:[0]}", reference = "by hand", prefix = "by hand", suffix = "torch::Tensor dice_forward(torch::Tensor x0);", signature = "torch::Tensor dice_forward(torch::Tensor x0);", infill_prompt = "by hand", end_to_end_prompt = "by hand">
      model "replay:k.jsonl" gpu_arch "sm_90" candidates [
        #dice.candidate<source = "// correct, 1.2x", verdict = <accepted, kernel_ms = 0.1, baseline_ms = 0.12, speedup = 1.2>, artifact = "a.so">] {
  ^bb0(%a: tensor<4xf32>):
    %e = tensor.empty() : tensor<4xf32>
    %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%v: f32, %o: f32):
      %n = math.exp %v : f32
      linalg.yield %n : f32
    } -> tensor<4xf32>
    dice.yield %y : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// CHECK-LABEL: func.func @all_wrong
// CHECK-NEXT: tensor.empty
// CHECK-NEXT: linalg.generic
// CHECK: math.tanh
// CHECK-NOT: dice.
func.func @all_wrong(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = dice.kernel_request "3333333333333333" level(1) (%x) : (tensor<4xf32>) -> tensor<4xf32>
      scaffold <program = "{\22inputs\22:[{\22dtype\22:\22float32\22,\22shape\22:[4]}],\22ops\22:[],\22outputs\22:[0]}", reference = "by hand", prefix = "by hand", suffix = "torch::Tensor dice_forward(torch::Tensor x0);", signature = "torch::Tensor dice_forward(torch::Tensor x0);", infill_prompt = "by hand", end_to_end_prompt = "by hand">
      model "replay:k.jsonl" gpu_arch "sm_90" candidates [
        #dice.candidate<source = "// wrong", verdict = <incorrect, reason = "output 0 differs">>,
        #dice.candidate<source = "// calls torch", verdict = <deceptive, reason = "calls at::matmul (line 3)">>] {
  ^bb0(%a: tensor<4xf32>):
    %e = tensor.empty() : tensor<4xf32>
    %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%v: f32, %o: f32):
      %n = math.tanh %v : f32
      linalg.yield %n : f32
    } -> tensor<4xf32>
    dice.yield %y : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
