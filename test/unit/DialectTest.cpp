//===- DialectTest.cpp - the dice dialect's C++ API -----------------------===//

#include "dice/Dialect/Dice/DiceOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::dice;

namespace {

class DiceDialectTest : public ::testing::Test {
protected:
  DiceDialectTest() { context.loadDialect<DiceDialect>(); }

  DictionaryAttr metrics(ArrayRef<std::pair<StringRef, double>> values) {
    Builder b(&context);
    NamedAttrList list;
    for (auto [name, value] : values)
      list.append(name, b.getF64FloatAttr(value));
    return list.getDictionary(&context);
  }

  /// Builds a verdict through the verifying builder and returns the first
  /// diagnostic it produced, or "" when it verified.
  std::string verifyVerdict(VerdictStatus status, StringRef reason,
                            DictionaryAttr values) {
    std::string message;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      if (message.empty())
        message = diag.str();
      return success();
    });
    StringAttr reasonAttr =
        reason.empty() ? StringAttr() : StringAttr::get(&context, reason);
    VerdictAttr::getChecked(UnknownLoc::get(&context), &context, status,
                            reasonAttr, values);
    return message;
  }

  MLIRContext context;
};

TEST_F(DiceDialectTest, VerdictMetricsReadBack) {
  auto verdict = VerdictAttr::get(
      &context, VerdictStatus::accepted, StringAttr(),
      metrics({{"kernel_ms", 0.5}, {"baseline_ms", 1.0}, {"speedup", 2.0}}));
  EXPECT_TRUE(verdict.isAccepted());
  EXPECT_EQ(verdict.getMetric("speedup"), 2.0);
  EXPECT_EQ(verdict.getMetric("max_abs_err"), std::nullopt);
}

TEST_F(DiceDialectTest, VerdictRulesHoldForProgrammaticBuilds) {
  EXPECT_EQ(verifyVerdict(VerdictStatus::accepted, "",
                          metrics({{"kernel_ms", 0.5},
                                   {"baseline_ms", 1.0},
                                   {"speedup", 2.0}})),
            "");
  EXPECT_EQ(verifyVerdict(VerdictStatus::accepted, "",
                          metrics({{"kernel_ms", 0.5},
                                   {"baseline_ms", 1.0},
                                   {"speedup", 3.0}})),
            "verdict speedup 3.0 does not match baseline_ms / kernel_ms = 2.0");
  EXPECT_EQ(verifyVerdict(VerdictStatus::incorrect, "", metrics({})),
            "incorrect verdict needs a reason a user can act on");
  EXPECT_EQ(verifyVerdict(VerdictStatus::compile_error, "nvcc failed",
                          metrics({{"kernel_ms", 0.5}})),
            "compile_error verdict cannot carry 'kernel_ms': no candidate "
            "code ran");
}

TEST_F(DiceDialectTest, KernelSymbolNameComesFromFingerprint) {
  OpBuilder b(&context);
  Location loc = b.getUnknownLoc();
  auto type = RankedTensorType::get({4}, b.getF32Type());
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  auto request = KernelRequestOp::create(
      b, loc, TypeRange{type}, ValueRange{}, "0123456789abcdef",
      /*level=*/1, /*scaffold=*/nullptr, /*model=*/nullptr,
      /*gpu_arch=*/nullptr, /*candidates=*/nullptr);
  EXPECT_EQ(request.getKernelSymbolName(), "k_0123456789abcdef");
}

} // namespace
