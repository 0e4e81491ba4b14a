//===- DialectTest.cpp - the dice dialect's C++ API -----------------------===//

#include "dice/Dialect/Dice/DiceOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::dice;

namespace {

class DiceDialectTest : public ::testing::Test {
protected:
  DiceDialectTest() { context.loadDialect<DiceDialect>(); }

  /// The measurements of a verdict, by name; the others absent.
  struct Timings {
    std::optional<double> kernelMs, baselineMs, speedup, maxRelErr;
  };

  FloatAttr f64(std::optional<double> value) {
    return value ? Builder(&context).getF64FloatAttr(*value) : FloatAttr();
  }

  /// Builds a verdict through the verifying builder and returns the first
  /// diagnostic it produced, or "" when it verified.
  std::string verifyVerdict(VerdictStatus status, StringRef reason,
                            Timings t) {
    std::string message;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      if (message.empty())
        message = diag.str();
      return success();
    });
    StringAttr reasonAttr =
        reason.empty() ? StringAttr() : StringAttr::get(&context, reason);
    VerdictAttr::getChecked(UnknownLoc::get(&context), &context, status,
                            reasonAttr, f64(t.baselineMs), FloatAttr(),
                            f64(t.kernelMs), FloatAttr(), f64(t.maxRelErr),
                            f64(t.speedup), std::optional<int64_t>());
    return message;
  }

  MLIRContext context;
};

TEST_F(DiceDialectTest, VerdictMeasurementsReadBack) {
  auto verdict = VerdictAttr::get(&context, VerdictStatus::Accepted,
                                  StringAttr(), f64(1.0), FloatAttr(),
                                  f64(0.5), FloatAttr(), FloatAttr(),
                                  f64(2.0), int64_t(5));
  EXPECT_TRUE(verdict.isAccepted());
  ::dice::VerdictMeasurements m = verdict.getMeasurements();
  EXPECT_EQ(m.speedup, 2.0);
  EXPECT_EQ(m.kernelMs, 0.5);
  EXPECT_EQ(m.trials, 5);
  EXPECT_EQ(m.maxAbsErr, std::nullopt);
}

TEST_F(DiceDialectTest, VerdictsWithNaNAreUniqued) {
  // A NaN never equals itself; the attribute still does.
  auto nan = [&] {
    return VerdictAttr::get(&context, VerdictStatus::Incorrect,
                            StringAttr::get(&context, "NaN output"),
                            FloatAttr(), FloatAttr(), FloatAttr(),
                            f64(std::nan("")), f64(std::nan("")), FloatAttr(),
                            std::optional<int64_t>());
  };
  EXPECT_EQ(nan(), nan());
}

TEST_F(DiceDialectTest, VerdictRulesHoldForProgrammaticBuilds) {
  EXPECT_EQ(verifyVerdict(VerdictStatus::Accepted, "",
                          {.kernelMs = 0.5, .baselineMs = 1.0, .speedup = 2.0}),
            "");
  EXPECT_EQ(verifyVerdict(VerdictStatus::Accepted, "",
                          {.kernelMs = 0.5, .baselineMs = 1.0, .speedup = 3.0}),
            "verdict speedup 3.0 does not match baseline_ms / kernel_ms = 2.0");
  EXPECT_EQ(verifyVerdict(VerdictStatus::Incorrect, "", {}),
            "incorrect verdict needs a reason a user can act on");
  EXPECT_EQ(verifyVerdict(VerdictStatus::CompileError, "nvcc failed",
                          {.kernelMs = 0.5}),
            "compile_error verdict cannot carry 'kernel_ms': no candidate "
            "code ran");
  EXPECT_EQ(verifyVerdict(VerdictStatus::Incorrect, "NaN output",
                          {.maxRelErr = std::nan("")}),
            "");
  EXPECT_EQ(verifyVerdict(VerdictStatus::Slow, "too slow",
                          {.kernelMs = 1.0, .baselineMs = 0.5, .speedup = 0.5,
                           .maxRelErr = std::numeric_limits<double>::infinity()}),
            "slow verdict needs a finite 'max_rel_err': its results matched "
            "the reference");
  // An f32 would not hold what the verdict JSON holds.
  std::string message;
  {
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      message = diag.str();
      return success();
    });
    VerdictAttr::getChecked(UnknownLoc::get(&context), &context,
                            VerdictStatus::Crashed,
                            StringAttr::get(&context, "trap"), FloatAttr(),
                            Builder(&context).getF32FloatAttr(1.0f),
                            FloatAttr(), FloatAttr(), FloatAttr(), FloatAttr(),
                            std::optional<int64_t>());
  }
  EXPECT_EQ(message, "verdict metric 'compile_ms' must be an f64, got 'f32'");
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

TEST_F(DiceDialectTest, CallIsAPureCallOfItsKernel) {
  OpBuilder b(&context);
  Location loc = b.getUnknownLoc();
  auto type = RankedTensorType::get({4}, b.getF32Type());
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  // baseline_ms 1.0, kernel_ms 0.5, speedup 2.0.
  auto verdict = VerdictAttr::get(&context, VerdictStatus::Accepted,
                                  StringAttr(), f64(1.0), FloatAttr(),
                                  f64(0.5), FloatAttr(), FloatAttr(),
                                  f64(2.0), std::optional<int64_t>());
  auto source = KernelOp::create(
      b, loc, "k_aaaaaaaaaaaaaaaa", b.getFunctionType({}, {type}), verdict,
      "__global__ void k() {}", /*artifact=*/nullptr);
  auto relu = KernelOp::create(
      b, loc, "k_0123456789abcdef", b.getFunctionType({type}, {type}), verdict,
      "__global__ void k() {}", /*artifact=*/nullptr);
  auto produce = CallOp::create(b, loc, TypeRange{type},
                                FlatSymbolRefAttr::get(source.getSymNameAttr()),
                                ValueRange{});
  auto call = CallOp::create(b, loc, TypeRange{type},
                             FlatSymbolRefAttr::get(relu.getSymNameAttr()),
                             produce.getResults());

  auto callLike = llvm::dyn_cast<CallOpInterface>(call.getOperation());
  ASSERT_TRUE(callLike);
  EXPECT_EQ(llvm::cast<SymbolRefAttr>(callLike.getCallableForCallee()),
            call.getCalleeAttr());
  ASSERT_EQ(callLike.getArgOperands().size(), 1u);
  EXPECT_EQ(callLike.getArgOperands()[0], produce.getResult(0));
  // The callee resolves to the kernel, which has no body to call into: the
  // call graph sees a call of an unknown callee.
  EXPECT_EQ(callLike.resolveCallable(), relu.getOperation());
  EXPECT_FALSE(llvm::isa<CallableOpInterface>(relu.getOperation()));
  callLike.setCalleeFromCallable(
      SymbolRefAttr::get(source.getSymNameAttr()));
  EXPECT_EQ(call.getCallee(), "k_aaaaaaaaaaaaaaaa");

  EXPECT_TRUE(isPure(call));
  EXPECT_FALSE(call.getArgAttrsAttr());
  EXPECT_FALSE(call.getResAttrsAttr());
}

} // namespace
