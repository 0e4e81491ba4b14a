//===- DiceOps.td - dice dialect operations ----------------*- tablegen -*-===//

#ifndef DICE_OPS_TD
#define DICE_OPS_TD

include "Dice/DiceDialect.td"
include "Dice/DiceAttrs.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/CallInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// dice.kernel_request
//===----------------------------------------------------------------------===//

// The KernelBench levels a request can have; the summary is what the
// verifier says about any other value.
def Dice_LevelAttr : ConfinedAttr<I32Attr, [IntMinValue<1>, IntMaxValue<3>]> {
  let summary = "KernelBench level: 1 (single op), 2 (fusion) or 3 (whole model)";
}

def Dice_KernelRequestOp : Dice_Op<"kernel_request", [
    IsolatedFromAbove, SingleBlock, RecursiveMemoryEffects]> {
  let summary = "a region of tensor code that a generated kernel may replace";
  let description = [{
    Wraps the original ops of a fusable region. The region is isolated from
    above: every tensor it reads, weights and constants included, is an
    operand, so the request is a pure function of its operands and can be
    verified, cached and replaced on its own. The entry block's arguments
    mirror the operands and `dice.yield` returns the results.

    `fingerprint` is a stable hash of what the region computes (its
    reference program in canonical form, with shapes and element types); the kernel database and the kernel symbol `@k_<fingerprint>`
    use it. `level` follows KernelBench: 1 a single op, 2 a fusion, 3 a whole
    model. After `dice-scaffold` the request carries a `#dice.scaffold`.

    After `dice-infill` it also carries its `candidates` (`#dice.candidate`
    each, verdicts added by `dice-verify`) and where they came from: `model`,
    the engine that wrote them (`"replay:kernels.jsonl"`, `"dice:DICE-8B"`),
    and `gpu_arch`, the architecture they are built and timed for. With the
    fingerprint and the scaffold version these are the kernel database key,
    so later passes store and choose under the key the candidates were found
    or written under.

    ```mlir
    %r = dice.kernel_request "3f9a0c1d2e4b5a69" level(2) (%x, %w)
        : (tensor<128x512xf32>, tensor<512x256xf32>) -> tensor<128x256xf32> {
    ^bb0(%a: tensor<128x512xf32>, %b: tensor<512x256xf32>):
      ...
      dice.yield %y : tensor<128x256xf32>
    }
    ```
  }];
  let arguments = (ins
    Variadic<AnyRankedTensor>:$inputs,
    StrAttr:$fingerprint,
    Dice_LevelAttr:$level,
    OptionalAttr<Dice_ScaffoldAttr>:$scaffold,
    OptionalAttr<StrAttr>:$model,
    OptionalAttr<StrAttr>:$gpu_arch,
    OptionalAttr<TypedArrayAttrBase<Dice_CandidateAttr,
                                    "array of #dice.candidate">>:$candidates
  );
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $fingerprint `level` `(` $level `)` `(` $inputs `)`
    `:` functional-type($inputs, $results)
    (`scaffold` $scaffold^)? (`model` $model^)? (`gpu_arch` $gpu_arch^)?
    (`candidates` $candidates^)? attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The symbol name of the kernel that implements this request.
    std::string getKernelSymbolName() {
      return ("k_" + getFingerprint()).str();
    }
    YieldOp getYield();
  }];
}

//===----------------------------------------------------------------------===//
// dice.yield
//===----------------------------------------------------------------------===//

def Dice_YieldOp : Dice_Op<"yield", [
    Pure, ReturnLike, Terminator, HasParent<"KernelRequestOp">]> {
  let summary = "returns the results of a kernel request";
  let arguments = (ins Variadic<AnyRankedTensor>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

//===----------------------------------------------------------------------===//
// dice.kernel
//===----------------------------------------------------------------------===//

def Dice_KernelOp : Dice_Op<"kernel", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "a generated kernel: source, verdict and built artifact";
  let description = [{
    Holds one verified candidate at module level. The symbol name is
    `k_<fingerprint>` of the request it implements; `function_type` is the
    request's signature; `source` is the CUDA source the model wrote;
    `verdict` is what the verifier found; `artifact` is the path of the built
    kernel library, once there is one.

    ```mlir
    dice.kernel @k_3f9a0c1d2e4b5a69 : (tensor<4xf32>) -> tensor<4xf32>
        verdict #dice.verdict<accepted, kernel_ms = 0.01, baseline_ms = 0.02, speedup = 2.0>
        source "__global__ void relu(...) {...}"
        artifact "kernels/k_3f9a0c1d2e4b5a69.so"
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    TypeAttrOf<FunctionType>:$function_type,
    Dice_VerdictAttr:$verdict,
    StrAttr:$source,
    OptionalAttr<StrAttr>:$artifact
  );
  let assemblyFormat = [{
    $sym_name `:` $function_type `verdict` $verdict `source` $source
    (`artifact` $artifact^)? attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The request fingerprint encoded in the symbol name.
    ::llvm::StringRef getFingerprint() { return getSymName().drop_front(2); }
  }];
}

//===----------------------------------------------------------------------===//
// dice.call
//===----------------------------------------------------------------------===//

def Dice_CallOp : Dice_Op<"call", [
    Pure, DeclareOpInterfaceMethods<CallOpInterface>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "calls an accepted generated kernel";
  let description = [{
    Replaces an accepted `dice.kernel_request`: calls `@k_<fingerprint>` with
    the request's operands. The callee must be a `dice.kernel` whose verdict
    is `accepted` and whose signature matches the operands and results.

    ```mlir
    %r = dice.call @k_3f9a0c1d2e4b5a69(%x) : (tensor<4xf32>) -> tensor<4xf32>
    ```

    The call is `Pure`: like the request it replaces, it is a function of
    its tensor operands with value semantics. The verifier rejects a
    candidate that writes its inputs (`incorrect`: "inputs were modified"),
    only accepted kernels may be called, and `dice-lower` turns the call
    into a `func.call` whose results are new buffers, so two calls with the
    same operands compute the same tensors and an unused call can go
    (`cse`, `canonicalize`).

    As a `CallOpInterface`, the call is seen by the call graph and by passes
    that rewrite calls; its callee is a `dice.kernel`, which is a symbol but
    not a `CallableOpInterface`, so the call graph records a call of an
    unknown callee. `arg_attrs` and `res_attrs` are the interface's
    argument and result attributes, as on `func.call`; the passes set none.
  }];
  let arguments = (ins
    FlatSymbolRefAttr:$callee,
    Variadic<AnyRankedTensor>:$inputs,
    OptionalAttr<DictArrayAttr>:$arg_attrs,
    OptionalAttr<DictArrayAttr>:$res_attrs
  );
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $callee `(` $inputs `)` attr-dict `:` functional-type($inputs, $results)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::TypeRange":$results,
                   "::mlir::FlatSymbolRefAttr":$callee,
                   "::mlir::ValueRange":$inputs), [{
      build($_builder, $_state, results, callee, inputs,
            /*arg_attrs=*/nullptr, /*res_attrs=*/nullptr);
    }]>
  ];
}

#endif // DICE_OPS_TD
