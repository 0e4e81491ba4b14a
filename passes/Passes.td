//===- Passes.td - the dice passes -------------------------*- tablegen -*-===//

#ifndef DICE_PASSES_TD
#define DICE_PASSES_TD

include "mlir/Pass/PassBase.td"

def DiceOutline : Pass<"dice-outline", "::mlir::ModuleOp"> {
  let summary = "Wrap fusable regions of each function into dice.kernel_request ops";
  let description = [{
    Forms kernel requests at one of three granularities, following the
    KernelBench levels:

    - `op` (level 1): each compute op (named linalg ops, `linalg.generic`,
      reductions) with the producers it owns: `tensor.empty`, the
      `linalg.fill` of its init and a `tensor.pad` that only it reads;
    - `fusion` (level 2): a compute-heavy op (matmul, convolution, pooling,
      reduction) with its elementwise and reshape consumers, and maximal
      elementwise chains; never a cycle, never work done twice;
    - `function` (level 3): the whole body of each function.

    Weights and constants stay outside: dense tensor constants, and ops that
    only rearrange them (the transpose of a weight matrix), become operands,
    so a request is a pure function of its tensors. Scalar constants,
    `tensor.empty` and fills are rematerialized inside each request that
    uses them.

    The fingerprint is a hash of the request printed in generic form, so
    the same computation gets the same fingerprint whatever its SSA names,
    its position or its function. Ops that the reference program cannot
    express exactly stay outside requests, each with a remark saying why.
  }];
  let options = [
    Option<"granularity", "granularity", "std::string", /*default=*/"\"fusion\"",
           "op, fusion or function (KernelBench levels 1, 2, 3)">
  ];
  let statistics = [
    Statistic<"numRequests", "requests", "Kernel requests formed">,
    Statistic<"numLeftOut", "left-out", "Compute ops left outside requests">
  ];
  let dependentDialects = ["::mlir::dice::DiceDialect"];
}

def DiceScaffold : Pass<"dice-scaffold", "::mlir::ModuleOp"> {
  let summary = "Attach the DICE scaffold and prompts to each kernel request";
  let description = [{
    Renders each `dice.kernel_request` into its reference program and
    attaches a `#dice.scaffold`: the program (JSON, for the verifier), the
    KernelBench-format reference the model reads, the prefix and suffix
    around the hole (the suffix declares `dice_forward` with the exact
    signature the compiler calls), and the kernel-infilling and end-to-end
    prompts in the Qwen3 chat format. A request whose region cannot be
    rendered is an error: `dice-outline` never forms one.
  }];
  let statistics = [
    Statistic<"numScaffolded", "scaffolded", "Kernel requests scaffolded">
  ];
}

#endif // DICE_PASSES_TD
