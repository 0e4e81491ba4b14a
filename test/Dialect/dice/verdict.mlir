// RUN: dice-opt %s | dice-opt | FileCheck %s

// Every double a verdict holds prints in a form that parses back to it, bit
// for bit: the shortest decimal that reads back as the value, and inf, -inf,
// nan (0x7ff8000000000000), -nan (0xfff8000000000000) or a NaN's bits in hex
// where no decimal can. The expected text is written by hand.

// Errors of a candidate whose outputs overflowed or were NaN.
// CHECK-LABEL: func.func private @non_finite_errors
// CHECK-SAME: v = #dice.verdict<incorrect, reason = "output 0 is NaN", max_abs_err = inf, max_rel_err = nan>
func.func private @non_finite_errors() attributes {
    v = #dice.verdict<incorrect, reason = "output 0 is NaN", max_rel_err = nan, max_abs_err = inf>}

// The sign of a NaN survives.
// CHECK-LABEL: func.func private @negative_nan
// CHECK-SAME: v = #dice.verdict<incorrect, reason = "x", max_rel_err = -nan>
func.func private @negative_nan() attributes {
    v = #dice.verdict<incorrect, reason = "x", max_rel_err = -nan>}

// Other NaNs keep their payload, spelled as their bits; bits that spell a
// plain NaN or an infinity print as its name.
// CHECK-LABEL: func.func private @nan_payloads
// CHECK-SAME: v = #dice.verdict<incorrect, reason = "x", max_abs_err = 0x7ff4000000000000, max_rel_err = 0xfff8000000000001>
// CHECK-LABEL: func.func private @bits_with_names
// CHECK-SAME: v = #dice.verdict<incorrect, reason = "x", max_abs_err = inf, max_rel_err = nan>
func.func private @nan_payloads() attributes {
    v = #dice.verdict<incorrect, reason = "x", max_abs_err = 0x7FF4000000000000, max_rel_err = 0xFFF8000000000001>}
func.func private @bits_with_names() attributes {
    v = #dice.verdict<incorrect, reason = "x", max_abs_err = 0x7FF0000000000000, max_rel_err = 0x7FF8000000000000>}

// Tiny, subnormal and long decimals print in their shortest exact form.
// CHECK-LABEL: func.func private @exact_decimals
// CHECK-SAME: v = #dice.verdict<incorrect, reason = "x", compile_ms = 0.30000000000000004, max_abs_err = 5.0e-324, max_rel_err = 1.0e-300>
// CHECK-LABEL: func.func private @largest_subnormal
// CHECK-SAME: v = #dice.verdict<incorrect, reason = "x", max_abs_err = 2.225073858507201e-308, max_rel_err = 1.7976931348623157e+308>
func.func private @exact_decimals() attributes {
    v = #dice.verdict<incorrect, reason = "x", max_abs_err = 4.9406564584124654e-324, max_rel_err = 1.0e-300, compile_ms = 0.30000000000000004>}
func.func private @largest_subnormal() attributes {
    v = #dice.verdict<incorrect, reason = "x", max_abs_err = 2.2250738585072009e-308, max_rel_err = 1.7976931348623157e308>}

// Keys come in any order and print in one; only the status is positional.
// CHECK-LABEL: func.func private @any_order
// CHECK-SAME: v = #dice.verdict<accepted, baseline_ms = 0.24, compile_ms = 812.5, kernel_ms = 0.1, max_abs_err = 0.0, max_rel_err = 2.0e-05, speedup = 2.4, trials = 5>
func.func private @any_order() attributes {
    v = #dice.verdict<accepted, trials = 5, speedup = 2.4, max_rel_err = 2.0e-5, max_abs_err = 0.0, kernel_ms = 0.1, compile_ms = 812.5, baseline_ms = 0.24>}

