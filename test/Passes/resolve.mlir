// dice-resolve on verdicts stored in a kernel database: the fastest accepted
// candidate wins, min_speedup is respected, and every failure kind falls back
// to the original ops with a remark saying why. dice-infill attaches the
// stored candidates (the replay file is empty: every candidate comes from
// the database).

// RUN: rm -rf %t && mkdir -p %t && cd %t
// RUN: dice-db import %t/kernels.db %S/Inputs/resolve-seed.jsonl
// RUN: dice-opt %s --dice-db=%t/kernels.db -verify-diagnostics \
// RUN:   --dice-outline=granularity=op --dice-scaffold \
// RUN:   --dice-infill=engine=replay:%S/Inputs/empty-replay.jsonl \
// RUN:   --dice-resolve=min-speedup=1.5 --dice-report=%t/report.txt \
// RUN:   | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t/report.txt
// RUN: dice-db list %t/kernels.db --fingerprint 6ccd8874ef0aa0c4 --model replay:empty-replay.jsonl | FileCheck %s --check-prefix=CHOSEN

// With dice.toml's min_speedup (1.0), the 1.2x kernel is good enough.
// RUN: dice-opt %s --dice-db=%t/kernels.db --dice-outline=granularity=op \
// RUN:   --dice-scaffold --dice-infill=engine=replay:%S/Inputs/empty-replay.jsonl \
// RUN:   --dice-resolve 2>&1 | FileCheck %s --check-prefix=DEFAULT
// DEFAULT: remark: using kernel @k_3be9e21627428891: candidate 1 of 1 accepted, 1.20x over the eager baseline

// Kernels go first, in the order of their requests.
// CHECK: dice.kernel @k_6ccd8874ef0aa0c4 : (tensor<1xf32>) -> tensor<1xf32> verdict <accepted, baseline_ms = 0.24, kernel_ms = 0.1, speedup = 2.4, trials = 5> source "// fastest: the fastest accepted one\0A__global__ void k() {}"
// CHECK-NOT: dice.kernel @

// CHECK-LABEL: func.func @fastest
// CHECK-NEXT: %[[R:.*]] = dice.call @k_6ccd8874ef0aa0c4(%{{.*}}) : (tensor<1xf32>) -> tensor<1xf32>
// CHECK-NEXT: return %[[R]]

// Every fallback is the original function, untouched.
// CHECK-LABEL: func.func @below_min_speedup
// CHECK-NEXT: tensor.empty() : tensor<2xf32>
// CHECK-NEXT: linalg.generic
// CHECK-NOT: dice.



// REPORT: fingerprint   level  ops             candidates  verdicts                      result
// REPORT-NEXT: 6ccd8874ef0a  1      linalg.generic           3  accepted (2), incorrect (1)   @k_6ccd8874ef0aa0c4 2.40x
// REPORT-NEXT: 3be9e2162742  1      linalg.generic           1  accepted (1)                  fallback: fastest correct candidate is 1.20x, below min_speedup 1.50x
// REPORT-NEXT: dc5790ea34b2  1      linalg.generic           1  compile_error (1)             fallback: all candidates compile_error (1)
// REPORT-NEXT: a335715b6688  1      linalg.generic           4  incorrect (3), deceptive (1)  fallback: all candidates incorrect (3), deceptive (1)
// REPORT-NEXT: 5aa74a130ba3  1      linalg.generic           1  crashed (1)                   fallback: all candidates crashed (1)
// REPORT-NEXT: 9f8b290f39ab  1      linalg.generic           1  slow (1)                      fallback: fastest correct candidate is 0.80x, below min_speedup 1.50x
// REPORT-NEXT: 8bc7e11095f6  1      linalg.generic           1  unverified (1)                fallback: unverified: no CUDA device: built and analysed, not run
// REPORT-NEXT: 4199acde848e  1      linalg.generic           0  -                             fallback: no candidates
// REPORT-NEXT: total: requests: 8, candidates: 12, kernels used: 1, fallbacks: 7 (no candidates: 1, all failed: 3, too slow: 2, unverified: 1){{$}}

// CHOSEN: ae1f3a1b1c7a  accepted  1.50x
// CHOSEN-NEXT: 2e191fe950b6  accepted  2.40x  chosen
// CHOSEN-NEXT: 1c68fba6d3b1  incorrect  -

#id = affine_map<(d0) -> (d0)>
func.func @fastest(%x: tensor<1xf32>) -> tensor<1xf32> {
  %e = tensor.empty() : tensor<1xf32>
  // expected-remark @below {{using kernel @k_6ccd8874ef0aa0c4: candidate 2 of 3 accepted, 2.40x over the eager baseline}}
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<1xf32>) outs(%e : tensor<1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<1xf32>
  return %r : tensor<1xf32>
}

func.func @below_min_speedup(%x: tensor<2xf32>) -> tensor<2xf32> {
  %e = tensor.empty() : tensor<2xf32>
  // expected-remark @below {{falling back to the original ops: fastest correct candidate is 1.20x, below min_speedup 1.50x}}
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<2xf32>) outs(%e : tensor<2xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<2xf32>
  return %r : tensor<2xf32>
}

func.func @compile_error(%x: tensor<3xf32>) -> tensor<3xf32> {
  %e = tensor.empty() : tensor<3xf32>
  // expected-remark @below {{falling back to the original ops: all candidates compile_error (1)}}
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<3xf32>) outs(%e : tensor<3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<3xf32>
  return %r : tensor<3xf32>
}

func.func @incorrect(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  // expected-remark @below {{falling back to the original ops: all candidates incorrect (3), deceptive (1)}}
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

func.func @crashed(%x: tensor<5xf32>) -> tensor<5xf32> {
  %e = tensor.empty() : tensor<5xf32>
  // expected-remark @below {{falling back to the original ops: all candidates crashed (1)}}
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<5xf32>) outs(%e : tensor<5xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<5xf32>
  return %r : tensor<5xf32>
}

func.func @slow(%x: tensor<6xf32>) -> tensor<6xf32> {
  %e = tensor.empty() : tensor<6xf32>
  // expected-remark @below {{falling back to the original ops: fastest correct candidate is 0.80x, below min_speedup 1.50x}}
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<6xf32>) outs(%e : tensor<6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<6xf32>
  return %r : tensor<6xf32>
}

func.func @unverified(%x: tensor<7xf32>) -> tensor<7xf32> {
  %e = tensor.empty() : tensor<7xf32>
  // expected-remark @below {{falling back to the original ops: unverified: no CUDA device: built and analysed, not run}}
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<7xf32>) outs(%e : tensor<7xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<7xf32>
  return %r : tensor<7xf32>
}

func.func @no_candidates(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  // expected-remark @below {{falling back to the original ops: no candidates}}
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
