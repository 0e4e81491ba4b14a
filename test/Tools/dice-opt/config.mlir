// A bad dice.toml stops dice-opt before it reads any input, with
// file:line:column: error: key: problem, and a non-zero exit status.

// RUN: not dice-opt --dice-config=%S/Inputs/unknown-key.toml %s 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: unknown-key.toml:3:1: error: sampling.denoisng_steps: unknown key (known in [sampling]: block_length, denoising_steps,

// RUN: not dice-opt --dice-config=%S/Inputs/wrong-type.toml %s 2>&1 | FileCheck %s --check-prefix=TYPE
// TYPE: wrong-type.toml:4:15: error: verifier.timing_runs: must be an integer, got a string

// RUN: not dice-opt --dice-config=%S/Inputs/out-of-range.toml %s 2>&1 | FileCheck %s --check-prefix=RANGE
// RANGE: out-of-range.toml:3:8: error: verifier.rtol: must be in [0, 1], got 2

// RUN: not dice-opt --dice-config=%S/Inputs/syntax-error.toml %s 2>&1 | FileCheck %s --check-prefix=SYNTAX
// SYNTAX: syntax-error.toml:2:21: error:

// RUN: not dice-opt --dice-config=%S/Inputs/missing.toml %s 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: missing.toml: error: cannot open configuration file

// A good file changes nothing in the IR.
// RUN: dice-opt --dice-config=%S/Inputs/good.toml %s | FileCheck %s --check-prefix=GOOD
// GOOD-LABEL: func.func @f
func.func @f() {
  return
}
