//===- DiceAttrs.td - dice dialect attributes --------------*- tablegen -*-===//

#ifndef DICE_ATTRS_TD
#define DICE_ATTRS_TD

include "Dice/DiceDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Verdict status
//===----------------------------------------------------------------------===//

def Dice_VerdictStatus : I32EnumAttr<"VerdictStatus",
    "outcome of verifying one candidate kernel", [
      I32EnumAttrCase<"accepted", 0>,
      I32EnumAttrCase<"slow", 1>,
      I32EnumAttrCase<"incorrect", 2>,
      I32EnumAttrCase<"deceptive", 3>,
      I32EnumAttrCase<"compile_error", 4>,
      I32EnumAttrCase<"crashed", 5>,
      I32EnumAttrCase<"unverified", 6>
    ]> {
  let cppNamespace = "::mlir::dice";
  // The verdict attribute owns the textual form; no separate enum attribute.
  let genSpecializedAttr = 0;
}

//===----------------------------------------------------------------------===//
// Granularity
//===----------------------------------------------------------------------===//

// How dice-outline groups work into requests (its `granularity` option);
// each value is the KernelBench level of the requests it forms, the
// request's `level` (a fusion group of one op is level 1).
def Dice_Granularity : I32Enum<"Granularity",
    "how dice-outline groups work into kernel requests", [
      I32EnumCase<"op", 1>,
      I32EnumCase<"fusion", 2>,
      I32EnumCase<"function", 3>
    ]> {
  let cppNamespace = "::mlir::dice";
}

class Dice_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Dice_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

//===----------------------------------------------------------------------===//
// #dice.scaffold
//===----------------------------------------------------------------------===//

def Dice_ScaffoldAttr : Dice_Attr<"Scaffold", "scaffold"> {
  let summary = "what the DICE model is asked to fill in for one request";
  let description = [{
    The pieces of the DICE-format scaffold of a kernel request:

    - `program`: the reference program as JSON (the torch-level operations
      the request computes; the verifier runs it for reference outputs);
    - `reference`: that program printed in KernelBench format (`class Model`,
      `get_inputs`, `get_init_inputs`), as the model reads it;
    - `prefix` and `suffix`: the compiler-written code around the hole; the
      suffix declares `dice_forward` with the exact signature the compiler
      calls;
    - `signature`: that C++ declaration alone, which the verifier compiles
      against;
    - `infill_prompt` and `end_to_end_prompt`: the two chat-formatted prompts
      (kernel infilling and end-to-end generation).

    ```mlir
    #dice.scaffold<program = "{...}", reference = "import torch...", prefix = "...",
                   suffix = "...", signature = "torch::Tensor dice_forward(...)",
                   infill_prompt = "...", end_to_end_prompt = "...">
    ```
  }];
  let parameters = (ins
    StringRefParameter<"reference program as JSON">:$program,
    StringRefParameter<"reference program in KernelBench format">:$reference,
    StringRefParameter<"code before the hole">:$prefix,
    StringRefParameter<"code after the hole">:$suffix,
    StringRefParameter<"C++ declaration of dice_forward">:$signature,
    StringRefParameter<"kernel-infilling prompt">:$infill_prompt,
    StringRefParameter<"end-to-end prompt">:$end_to_end_prompt
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// #dice.verdict
//===----------------------------------------------------------------------===//

def Dice_VerdictAttr : Dice_Attr<"Verdict", "verdict"> {
  let summary = "the verifier's judgement of one candidate kernel";
  let description = [{
    A status and the measurements behind it, mirroring the verifier's verdict
    JSON. Metrics are optional; which ones must be present depends on the
    status:

    - `accepted` and `slow` carry timings (`kernel_ms`, `baseline_ms`) and
      the `speedup` they imply;
    - every other status carries a `reason` a user can act on, and
      `compile_error` and `unverified` carry no timings, because nothing ran.

    ```mlir
    #dice.verdict<accepted, kernel_ms = 0.1, baseline_ms = 0.24, speedup = 2.4, trials = 5>
    #dice.verdict<incorrect, reason = "max relative error 0.31 at output 0", max_rel_err = 0.31>
    ```

    Known metric keys: `compile_ms`, `max_abs_err`, `max_rel_err`, `trials`,
    `kernel_ms`, `baseline_ms`, `speedup`.
  }];
  let parameters = (ins
    "::mlir::dice::VerdictStatus":$status,
    "::mlir::StringAttr":$reason,
    "::mlir::DictionaryAttr":$metrics
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The value of a floating-point metric, if present.
    std::optional<double> getMetric(::llvm::StringRef name) const;
    bool isAccepted() const { return getStatus() == VerdictStatus::accepted; }
  }];
}

//===----------------------------------------------------------------------===//
// #dice.candidate
//===----------------------------------------------------------------------===//

def Dice_CandidateAttr : Dice_Attr<"Candidate", "candidate"> {
  let summary = "one candidate kernel of a request, and what became of it";
  let description = [{
    What `dice-infill` attaches to a kernel request, one per candidate, and
    what `dice-verify` completes:

    - `answer`: the model's whole answer (the hole plus whatever it wrote
      around it), when the candidate came from a model;
    - `source`: the CUDA source. A replay or the kernel database may give it
      directly; `dice-verify` fills it in with what it extracted from the
      answer;
    - `verdict`: the verifier's `#dice.verdict`, absent until verified;
    - `artifact`: the path of the built kernel library, when one was built.

    ```mlir
    #dice.candidate<answer = "source = \"\"\"...\"\"\"">
    #dice.candidate<source = "__global__ void k(...) {...}",
                    verdict = <accepted, kernel_ms = 0.1, baseline_ms = 0.2, speedup = 2.0>,
                    artifact = ".dice/cache/3f9a/lib.so">
    ```

    A candidate has an answer or a source. An accepted or slow candidate has
    a source (its code ran), and an artifact belongs to a verified
    candidate.
  }];
  let parameters = (ins
    OptionalParameter<"::mlir::StringAttr", "the model's answer">:$answer,
    OptionalParameter<"::mlir::StringAttr", "the CUDA source">:$source,
    OptionalParameter<"::mlir::dice::VerdictAttr", "the verifier's verdict">:$verdict,
    OptionalParameter<"::mlir::StringAttr", "path of the kernel library">:$artifact
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The text the verifier reads: the source when known, else the answer.
    ::llvm::StringRef getVerifiedText() const {
      return getSource() ? getSource().getValue() : getAnswer().getValue();
    }
  }];
}

#endif // DICE_ATTRS_TD
