// dice-lower: kernel calls become calls of private C-interface declarations;
// the libraries, the manifest and the trampolines land in the artifacts dir.
// Artifact paths in the IR are relative to the directory dice-opt runs in.
// RUN: rm -rf %t && mkdir -p %t/art
// RUN: echo '{"version": 1, "kernels": {"feedfacefeedface": {"library": "k_feedfacefeedface.so", "operator": "dice::k_feedfacefeedface", "inputs": [], "results": []}}}' > %t/art/manifest.json
// RUN: cd %S && dice-opt %s --dice-lower=artifacts=%t/art | FileCheck %s
// RUN: cmp %S/Inputs/lower/k_3f9a0c1d2e4b5a69.so %t/art/k_3f9a0c1d2e4b5a69.so
// RUN: cmp %S/Inputs/lower/pair.so %t/art/k_00aa11bb22cc33dd.so
// RUN: not test -e %t/art/k_0badc0de0badc0de.so
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/art/manifest.json
// RUN: FileCheck %s --check-prefix=TRAMPOLINE < %t/art/k_3f9a0c1d2e4b5a69.ciface.c
// RUN: FileCheck %s --check-prefix=PAIR < %t/art/k_00aa11bb22cc33dd.ciface.c
// The trampolines are C that compiles against the runtime's header.
// RUN: cc -std=c99 -Wall -Werror -fsyntax-only -I%dice_src_root/include %t/art/k_3f9a0c1d2e4b5a69.ciface.c
// RUN: cc -std=c99 -Wall -Werror -fsyntax-only -I%dice_src_root/include %t/art/k_00aa11bb22cc33dd.ciface.c
// Lowering again is idempotent: same libraries, same manifest.
// RUN: cp %t/art/manifest.json %t/first.json
// RUN: cd %S && dice-opt %s --dice-lower=artifacts=%t/art > /dev/null
// RUN: diff %t/first.json %t/art/manifest.json

// CHECK-NOT: {{dice\.(kernel|call)}}
// CHECK-DAG: func.func private @dice_k_3f9a0c1d2e4b5a69(tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> attributes {dice.library = "k_3f9a0c1d2e4b5a69.so", llvm.emit_c_interface}
// CHECK-DAG: func.func private @dice_k_00aa11bb22cc33dd(tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8x4xf16>) attributes {dice.library = "k_00aa11bb22cc33dd.so", llvm.emit_c_interface}
// CHECK-NOT: dice_k_0badc0de0badc0de
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK: %[[R:.*]] = call @dice_k_3f9a0c1d2e4b5a69(%[[X]], %[[B]]) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK: %[[N:.*]] = linalg.negf ins(%[[R]] : tensor<4x8xf32>) outs(%[[E]] : tensor<4x8xf32>)
// CHECK: %[[S:.*]] = call @dice_k_3f9a0c1d2e4b5a69(%[[N]], %[[B]])
// CHECK: %[[P:.*]]:2 = call @dice_k_00aa11bb22cc33dd(%[[S]]) : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8x4xf16>)
// CHECK: return %[[P]]#0, %[[P]]#1
// CHECK-NOT: {{dice\.(kernel|call)}}

// MANIFEST: "kernels": {
// MANIFEST-DAG: "feedfacefeedface": {
// MANIFEST-DAG: "3f9a0c1d2e4b5a69": {
// MANIFEST-DAG: "00aa11bb22cc33dd": {
// MANIFEST-NOT: 0badc0de0badc0de
// MANIFEST: "version": 1

// The single-result kernel's entry, in full; the verdict in the verifier's
// JSON, with what the attribute does not hold null or empty.
// RUN: %python -c "import json,sys; e=json.load(open(sys.argv[1]))['kernels']['3f9a0c1d2e4b5a69']; print(json.dumps(e, sort_keys=True))" %t/art/manifest.json | FileCheck %s --check-prefix=ENTRY
// ENTRY: {"inputs": [{"dtype": "float32", "shape": [4, 8]}, {"dtype": "float32", "shape": [8]}], "library": "k_3f9a0c1d2e4b5a69.so", "operator": "dice::k_3f9a0c1d2e4b5a69", "results": [{"dtype": "float32", "shape": [4, 8]}], "symbol": "dice_k_3f9a0c1d2e4b5a69", "verdict": {"baseline": "", "baseline_ms": 0.24, "baselines": {}, "candidate_hash": "", "compile_ms": null, "driver": "", "fingerprint": "3f9a0c1d2e4b5a69", "gpu": "", "kernel_ms": 0.1, "launched_kernels": null, "max_abs_err": null, "max_rel_err": null, "reason": "", "speedup": 2.4, "status": "accepted", "trials": 5, "verifier_version": 1}}

// TRAMPOLINE: #include "dice/Runtime/DiceRuntime.h"
// TRAMPOLINE: void _mlir_ciface_dice_k_3f9a0c1d2e4b5a69(dice_k_3f9a0c1d2e4b5a69_out0 *results, dice_k_3f9a0c1d2e4b5a69_in0 *a0, dice_k_3f9a0c1d2e4b5a69_in1 *a1) {
// TRAMPOLINE: dice_runtime_open(manifest ? manifest : "{{.*}}/art/manifest.json",
// TRAMPOLINE: {(char *)a0->aligned + a0->offset * 4, 2, a0->sizes, a0->strides, 0, DICE_KERNEL_DEVICE},
// TRAMPOLINE: {(char *)a1->aligned + a1->offset * 4, 1, a1->sizes, a1->strides, 0, DICE_KERNEL_DEVICE},
// TRAMPOLINE: {NULL, 2, results->sizes, results->strides, 0, DICE_KERNEL_DEVICE},
// TRAMPOLINE: dice_runtime_call("3f9a0c1d2e4b5a69", 2, inputs, 1, outputs, error,
// TRAMPOLINE: results->allocated = results->aligned = outputs[0].data;

// Several results come back through one struct of descriptors; float16 is
// DiceDType 1 and two bytes wide.
// PAIR: } dice_k_00aa11bb22cc33dd_out1;
// PAIR-NEXT: typedef struct {
// PAIR-NEXT: dice_k_00aa11bb22cc33dd_out0 r0;
// PAIR-NEXT: dice_k_00aa11bb22cc33dd_out1 r1;
// PAIR-NEXT: } dice_k_00aa11bb22cc33dd_results;
// PAIR: void _mlir_ciface_dice_k_00aa11bb22cc33dd(dice_k_00aa11bb22cc33dd_results *results, dice_k_00aa11bb22cc33dd_in0 *a0) {
// PAIR: {NULL, 2, results->r1.sizes, results->r1.strides, 1, DICE_KERNEL_DEVICE},
// PAIR: results->r1.allocated = results->r1.aligned = outputs[1].data;

module {
  dice.kernel @k_3f9a0c1d2e4b5a69 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
      verdict #dice.verdict<accepted, kernel_ms = 0.1, baseline_ms = 0.24, speedup = 2.4, trials = 5>
      source "__global__ void bias_relu() {}"
      artifact "Inputs/lower/k_3f9a0c1d2e4b5a69.so"
  dice.kernel @k_00aa11bb22cc33dd : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8x4xf16>)
      verdict #dice.verdict<accepted, kernel_ms = 0.5, baseline_ms = 1.0, speedup = 2.0>
      source "__global__ void pair() {}"
      artifact "Inputs/lower/pair.so"
  // Not called: erased, and its (missing) artifact is never read.
  dice.kernel @k_0badc0de0badc0de : (tensor<4xf32>) -> tensor<4xf32>
      verdict #dice.verdict<accepted, kernel_ms = 0.5, baseline_ms = 1.0, speedup = 2.0>
      source "__global__ void unused() {}"
      artifact "Inputs/lower/absent.so"

  func.func @forward(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8x4xf16>) {
    %r = dice.call @k_3f9a0c1d2e4b5a69(%x, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %e = tensor.empty() : tensor<4x8xf32>
    %n = linalg.negf ins(%r : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
    %s = dice.call @k_3f9a0c1d2e4b5a69(%n, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %p:2 = dice.call @k_00aa11bb22cc33dd(%s) : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8x4xf16>)
    return %p#0, %p#1 : tensor<4x8xf32>, tensor<8x4xf16>
  }
}
