//===- DiceDialect.td - the dice dialect -------------------*- tablegen -*-===//
//
// The dice dialect carries kernel requests through the compiler: regions of
// linalg-on-tensors that a generated CUDA kernel may replace, the scaffolds
// that the DICE model fills in, the verifier's verdicts and the accepted
// kernels that lowered code calls.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_DIALECT_TD
#define DICE_DIALECT_TD

include "mlir/IR/OpBase.td"

def Dice_Dialect : Dialect {
  let name = "dice";
  let cppNamespace = "::mlir::dice";
  let summary = "Kernel requests, scaffolds, verdicts and generated kernels";
  let description = [{
    The `dice` dialect is the contract between the DICE compiler passes.
    `dice-outline` wraps fusable linalg-on-tensors regions into
    `dice.kernel_request` ops; `dice-scaffold` attaches a `#dice.scaffold`
    holding the reference program and the prompt pieces; the verifier's
    results are `#dice.verdict` attributes; an accepted request becomes a
    `dice.call` of a module-level `dice.kernel`, and a rejected one is inlined
    back so that the rest of the pipeline sees the ops it would have seen
    without DICE.

    Three discardable attributes, checked by the dialect: `dice.position`
    (an integer: an op's index in its block before `dice-outline`, which
    `dice-resolve` uses to restore the order and then removes),
    `dice.library` (a string: the kernel library of a lowered
    `dice_k_<fingerprint>` declaration), and `dice.example_shapes` (the
    example shapes of a request's operands where some are dynamic). A
    function argument may carry `dice.example_shape` (an i64 array): the
    shape the program was exported at.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Defined beside the attribute storage classes (DiceAttrs.cpp).
    void registerAttributes();

    /// An op's index in its block before dice-outline moved it: dice-resolve
    /// restores that order where requests fall back, and removes the
    /// attribute. An integer.
    static constexpr ::llvm::StringLiteral kPositionAttrName = "dice.position";
    /// The kernel library a lowered `dice_k_<fingerprint>` declaration
    /// calls into, relative to the artifacts directory. A string.
    static constexpr ::llvm::StringLiteral kLibraryAttrName = "dice.library";
    /// The shapes a kernel request's operands were exported at, dynamic
    /// dimensions at their example sizes (-1: unknown): an array of i64
    /// arrays, one per operand. The reference program's size symbols take
    /// their examples from it.
    static constexpr ::llvm::StringLiteral kExampleShapesAttrName = "dice.example_shapes";
  }];
}

class Dice_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dice_Dialect, mnemonic, traits>;

#endif // DICE_DIALECT_TD
