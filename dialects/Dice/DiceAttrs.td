//===- DiceAttrs.td - dice dialect attributes --------------*- tablegen -*-===//

#ifndef DICE_ATTRS_TD
#define DICE_ATTRS_TD

include "Dice/DiceDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

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
      (kernel infilling and end-to-end generation);
    - `prompt_template` (left out for the built-in wording): the identity of
      the template files the prompts were written from (16 hex digits), part
      of the kernel database key.

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
    StringRefParameter<"end-to-end prompt">:$end_to_end_prompt,
    StringRefParameter<"prompt templates' identity (empty: the built-in ones)",
                       "\"\"">:$prompt_template
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// #dice.verdict
//===----------------------------------------------------------------------===//

/// A measurement of `#dice.verdict`: a bare number, or `inf`, `-inf`, `nan`,
/// `-nan` or a NaN's bits in hex (nonFiniteSpelling in VerdictNumbers.h), so
/// every double prints in a form that parses back to it bit for bit.
class Dice_MeasurementParameter<string desc>
    : OptionalParameter<"::mlir::FloatAttr", desc> {
  let parser = "::mlir::dice::parseMeasurement($_parser)";
  let printer = "::mlir::dice::printMeasurement($_printer, $_self)";
}

def Dice_VerdictAttr : Dice_Attr<"Verdict", "verdict"> {
  let summary = "the verifier's judgement of one candidate kernel";
  let description = [{
    A status and the measurements behind it, mirroring the verifier's verdict
    JSON (`dice::Verdict`). The status is `::dice::VerdictStatus`, the enum
    of the verdict JSON, and the verifier applies the JSON's rules
    (`dice::checkVerdictConsistency`), so the two formats accept the same
    verdicts. Measurements are optional; which ones must be present depends
    on the status:

    - `accepted` and `slow` carry timings (`kernel_ms`, `baseline_ms`) and
      the `speedup` they imply, and finite errors;
    - every other status carries a `reason` a user can act on, and
      `compile_error` and `unverified` carry no timings, because nothing ran;
    - timings are finite and non-negative; errors (`max_abs_err`,
      `max_rel_err`) are non-negative, and may be `inf` or `nan` for a
      candidate whose outputs overflowed or were NaN.

    ```mlir
    #dice.verdict<accepted, kernel_ms = 0.1, baseline_ms = 0.24, speedup = 2.4, trials = 5>
    #dice.verdict<incorrect, reason = "max relative error 0.31 at output 0", max_rel_err = 0.31>
    #dice.verdict<incorrect, reason = "output 0 is NaN", max_abs_err = nan, max_rel_err = inf>
    ```

    The keys after the status may come in any order; they print in the
    order below.
  }];
  let parameters = (ins
    "::dice::VerdictStatus":$status,
    OptionalParameter<"::mlir::StringAttr", "what a user can act on">:$reason,
    Dice_MeasurementParameter<"reference time, ms">:$baseline_ms,
    Dice_MeasurementParameter<"build time, ms">:$compile_ms,
    Dice_MeasurementParameter<"candidate time, ms">:$kernel_ms,
    Dice_MeasurementParameter<"largest absolute error">:$max_abs_err,
    Dice_MeasurementParameter<"largest relative error">:$max_rel_err,
    Dice_MeasurementParameter<"baseline_ms / kernel_ms">:$speedup,
    OptionalParameter<"std::optional<int64_t>", "correctness trials">:$trials
  );
  let assemblyFormat = [{
    `<` custom<VerdictStatus>($status)
    (`,` struct($reason, $baseline_ms, $compile_ms, $kernel_ms, $max_abs_err,
                $max_rel_err, $speedup, $trials)^)? `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    bool isAccepted() const {
      return getStatus() == ::dice::VerdictStatus::Accepted;
    }
    /// The measurements as the verdict JSON holds them.
    ::dice::VerdictMeasurements getMeasurements() const;
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
