//===- DialectTest.cpp - the dice dialect's C++ API -----------------------===//

#include "dice/Dialect/Dice/DiceOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

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

TEST_F(DiceDialectTest, CallIsAPureCallOfItsKernel) {
  OpBuilder b(&context);
  Location loc = b.getUnknownLoc();
  auto type = RankedTensorType::get({4}, b.getF32Type());
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  auto verdict = VerdictAttr::get(
      &context, VerdictStatus::accepted, StringAttr(),
      metrics({{"kernel_ms", 0.5}, {"baseline_ms", 1.0}, {"speedup", 2.0}}));
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
