//===- Passes.td - the dice passes -------------------------*- tablegen -*-===//

#ifndef DICE_PASSES_TD
#define DICE_PASSES_TD

include "mlir/Pass/PassBase.td"

// Options that several passes take, declared once: `--dice-pipeline` gives
// one value to every pass that declares the option (its typed options,
// DicePipelineOptions in Passes.h, hold each pass option once more with
// these defaults; test/unit/PipelineOptionsTest.cpp holds the two
// together), and dice-opt's
// `--dice-config`, `--dice-db` and `--dice-report` fill them in where the
// pipeline left them empty, so the printed pipeline reproduces the run.
defvar DiceConfigOption =
    Option<"configFile", "config", "std::string", /*default=*/"\"\"",
           "dice.toml to read (empty: the built-in defaults)">;
defvar DiceDatabaseOption =
    Option<"database", "db", "std::string", /*default=*/"\"\"",
           "kernel database (empty: dice.toml's database)">;
defvar DiceArtifactsOption =
    Option<"artifacts", "artifacts", "std::string", /*default=*/"\"\"",
           "directory of kernel libraries, workers' scratch space and "
           "manifest.json (empty: dice.toml's artifacts.dir)">;

// dice-outline and dice-scaffold change one function at a time and keep no
// state across functions (a request's fingerprint is a hash of its own
// reference program), so they run on `func.func` and in parallel. The
// passes after them stay on the module: dice-infill, dice-verify and
// dice-resolve load dice.toml and the kernel database once and batch every
// request of the module (verify builds them all at once), dice-resolve adds
// `dice.kernel` symbols to the module, and dice-lower writes the manifest
// of all the module's kernels.
def DiceOutline : Pass<"dice-outline", "::mlir::func::FuncOp"> {
  let summary = "Wrap fusable regions of a function into dice.kernel_request ops";
  let description = [{
    Forms kernel requests at one of three granularities, following the
    KernelBench levels:

    - `op` (level 1): each compute op (named linalg ops, `linalg.generic`,
      reductions) with the producers it owns: `tensor.empty`, the
      `linalg.fill` of its init and a `tensor.pad` that only it reads;
    - `fusion` (level 2): a matmul, convolution or pooling with its
      elementwise epilogue; a normalization (reductions over the same rows,
      such as softmax or layer norm, with the elementwise ops around them);
      maximal elementwise chains; transposes, broadcasts and reshapes go into
      the request that reads them (docs/passes.md, "Fusion policy"); never a
      cycle between requests, never compute done twice;
    - `function` (level 3): the whole body of each function.

    Weights and constants stay outside: dense tensor constants, and ops that
    only rearrange them (the transpose of a weight matrix), become operands,
    so a request is a pure function of its tensors. Scalar constants,
    `tensor.empty` and fills are rematerialized inside each request that
    uses them.

    The fingerprint is a hash of the request's reference program in
    canonical form, so the same computation gets the same fingerprint
    whatever its SSA names, attribute spellings, the order of its
    independent ops, its position or its function, and whatever MLIR
    version printed it. Ops that the reference program cannot
    express exactly stay outside requests, each with a remark saying why.
  }];
  let options = [
    // Parsed by llvm::cl::parser<Granularity> (Passes.h).
    Option<"granularity", "granularity", "::mlir::dice::Granularity",
           /*default=*/"::mlir::dice::Granularity::fusion",
           "op, fusion or function (KernelBench levels 1, 2, 3)">
  ];
  let statistics = [
    Statistic<"numRequests", "requests", "Kernel requests formed">,
    Statistic<"numLeftOut", "left-out", "Compute ops left outside requests">
  ];
  let dependentDialects = ["::mlir::dice::DiceDialect"];
}

def DiceScaffold : Pass<"dice-scaffold", "::mlir::func::FuncOp"> {
  let summary = "Attach the DICE scaffold and prompts to each kernel request";
  let description = [{
    Renders each `dice.kernel_request` into its reference program and
    attaches a `#dice.scaffold`: the program (JSON, for the verifier), the
    KernelBench-format reference the model reads, the prefix and suffix
    around the hole (the suffix declares `dice_forward` with the exact
    signature the compiler calls), and the kernel-infilling and end-to-end
    prompts in the Qwen3 chat format, worded by dice.toml's `[prompt]`
    template files or the built-in ones. A request whose region cannot be
    rendered is an error: `dice-outline` never forms one.
  }];
  let options = [DiceConfigOption];
  let statistics = [
    Statistic<"numScaffolded", "scaffolded", "Kernel requests scaffolded">
  ];
}

def DiceInfill : Pass<"dice-infill", "::mlir::ModuleOp"> {
  let summary = "Attach candidate kernels to each scaffolded kernel request";
  let description = [{
    For each scaffolded `dice.kernel_request`, looks up the kernel database
    under (fingerprint, `gpu-arch`, scaffold version, the engine's model id)
    first: stored candidates, with their verdicts, are attached as they are
    and no engine is asked. Otherwise the engine decodes `candidates`
    answers to the request's infilling prompt (sampling parameters from
    dice.toml's `[sampling]`).

    Engines: `replay:<file.jsonl>` (recorded candidates, by fingerprint),
    `model` (the DICE model at dice.toml's `model`), `model:<dir>`. The
    engine is loaded only when some request misses the database; a load
    failure is an error on the module.

    Each candidate becomes a `#dice.candidate` in the request's
    `candidates`, and the request records `model` and `gpu_arch`, the rest
    of its database key.
  }];
  let options = [
    Option<"engine", "engine", "std::string", /*default=*/"\"model\"",
           "replay:<file.jsonl>, model (dice.toml's model) or model:<dir>">,
    Option<"candidates", "candidates", "int64_t", /*default=*/"0",
           "candidates per request (0: dice.toml's sampling.candidates)">,
    Option<"gpuArch", "gpu-arch", "std::string", /*default=*/"\"sm_90\"",
           "GPU architecture the candidates are for (database key)">,
    DiceDatabaseOption, DiceConfigOption
  ];
  let statistics = [
    Statistic<"numRequests", "requests", "Kernel requests given candidates">,
    Statistic<"numDatabaseHits", "database-hits",
              "Requests answered from the kernel database">,
    Statistic<"numCandidates", "candidates", "Candidates attached">
  ];
}

def DiceVerify : Pass<"dice-verify", "::mlir::ModuleOp"> {
  let summary = "Verify every candidate and attach its verdict";
  let description = [{
    Sends the candidates of all requests to the verifier in one batch, so
    that kernel library builds and GPU workers run in parallel: extraction
    of the hole, static deception analysis, the build, then correctness,
    deception and timing checks on the GPU. Each candidate gets its
    `#dice.verdict`, its extracted `source` and, when a library was built,
    its `artifact`; every result is stored in the kernel database with the
    library's bytes.

    Candidates that already carry a verdict (from the database) keep it,
    except `unverified` ones when this machine has a CUDA device. What holds
    for the whole run ("no CUDA device: ...") is one remark on the module.
  }];
  let options = [
    DiceDatabaseOption, DiceConfigOption, DiceArtifactsOption,
    Option<"nvcc", "nvcc", "std::string", /*default=*/"\"\"",
           "nvcc to build candidates with (default: this installation's)">,
    Option<"staticAnalysis", "static-analysis", "bool", /*default=*/"true",
           "run the static deception analysis before building">,
    Option<"jobs", "jobs", "unsigned", /*default=*/"0",
           "kernel library builds at once (0: one per CPU core)">
  ];
  let statistics = [
    Statistic<"numVerified", "verified", "Candidates sent to the verifier">,
    Statistic<"numKept", "kept", "Candidates that kept a stored verdict">
  ];
}

def DiceResolve : Pass<"dice-resolve", "::mlir::ModuleOp"> {
  let summary = "Replace each request by its best kernel, or inline it back";
  let description = [{
    Per request, the fastest candidate whose verdict is `accepted` with a
    speedup of at least `min-speedup` becomes a module-level
    `dice.kernel @k_<fingerprint>` (source, verdict, artifact) and the
    request becomes a `dice.call` of it; the choice is recorded in the
    kernel database. Otherwise the request's ops are inlined back where the
    request was, so the rest of the pipeline sees what it would have seen
    without DICE.

    Every decision is a remark with its reason (the speedup, or why no
    candidate qualified); `report` writes one table row per request.
  }];
  let options = [
    Option<"minSpeedup", "min-speedup", "double", /*default=*/"-1",
           "least speedup to use a kernel (negative: dice.toml's "
           "verifier.min_speedup)">,
    DiceDatabaseOption, DiceConfigOption, DiceArtifactsOption,
    Option<"report", "report", "std::string", /*default=*/"\"\"",
           "file to write the per-request report to, '-' for stdout "
           "(empty: no report)">
  ];
  let statistics = [
    Statistic<"numRequests", "requests", "Kernel requests resolved">,
    Statistic<"numCandidates", "candidates", "Candidates considered">,
    Statistic<"numAccepted", "accepted", "Requests replaced by a kernel">,
    Statistic<"numNoCandidates", "fallback-no-candidates",
              "Fallbacks: the request had no candidates">,
    Statistic<"numAllFailed", "fallback-failed",
              "Fallbacks: every candidate failed a check">,
    Statistic<"numTooSlow", "fallback-slow",
              "Fallbacks: correct candidates, none fast enough">,
    Statistic<"numUnverified", "fallback-unverified",
              "Fallbacks: candidates could not be run here">
  ];
}

def DiceLower : Pass<"dice-lower", "::mlir::ModuleOp"> {
  let summary = "Turn kernel calls into calls of the kernel libraries";
  let description = [{
    For each `dice.kernel` that a `dice.call` uses, copies its artifact into
    the artifacts directory as `k_<fingerprint>.so`, records it in
    `<artifacts>/manifest.json` (merged with the kernels already there) and
    writes `k_<fingerprint>.ciface.c`, the C-interface trampoline that
    forwards to the DICE runtime. Each `dice.call` becomes a `func.call` of
    a private declaration `@dice_k_<fingerprint>` marked
    `llvm.emit_c_interface` and `dice.library`; the `dice.kernel` ops are
    erased, so the output is plain func/linalg/tensor IR.
  }];
  let options = [DiceArtifactsOption, DiceConfigOption];
  let statistics = [
    Statistic<"numKernels", "kernels", "Kernel libraries written">,
    Statistic<"numCalls", "calls", "Kernel calls lowered">
  ];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

#endif // DICE_PASSES_TD
