//===- VerdictTest.cpp - verdict JSON and its consistency rules -----------===//

#include "dice/VerifierCore/Verdict.h"

#include <gtest/gtest.h>

using namespace dice;

namespace {

Verdict accepted() {
  Verdict v;
  v.fingerprint = "3f9a00c0ffee1234";
  v.candidateHash = "ab12";
  v.status = VerdictStatus::Accepted;
  v.compileMs = 812.5;
  v.maxAbsErr = 1e-6;
  v.maxRelErr = 2e-5;
  v.trials = 5;
  v.setTimings(0.1, 0.24);
  v.launchedKernels = 1;
  v.gpu = "NVIDIA H200";
  v.driver = "580.65";
  return v;
}

Verdict withStatus(VerdictStatus status, std::string reason) {
  Verdict v;
  v.fingerprint = "3f9a00c0ffee1234";
  v.status = status;
  v.reason = std::move(reason);
  return v;
}

std::string problem(const Verdict &v) { return v.validate(); }

TEST(Verdict, StatusNamesRoundTrip) {
  for (auto status :
       {VerdictStatus::Accepted, VerdictStatus::Slow, VerdictStatus::Incorrect,
        VerdictStatus::Deceptive, VerdictStatus::CompileError,
        VerdictStatus::Crashed, VerdictStatus::Unverified})
    EXPECT_EQ(parseVerdictStatus(verdictStatusName(status)), status);
  EXPECT_EQ(verdictStatusName(VerdictStatus::CompileError), "compile_error");
  EXPECT_FALSE(parseVerdictStatus("ok"));
}

TEST(Verdict, JsonRoundTripKeepsEveryField) {
  Verdict v = accepted();
  ASSERT_EQ(problem(v), "");
  std::string text = v.toJson();
  EXPECT_EQ(text.find('\n'), std::string::npos) << "one line per verdict";
  EXPECT_EQ(text.rfind("{\"fingerprint\":", 0), 0u) << text;
  std::string error;
  std::optional<Verdict> back = Verdict::fromJson(text, error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->fingerprint, v.fingerprint);
  EXPECT_EQ(back->candidateHash, v.candidateHash);
  EXPECT_EQ(back->status, v.status);
  EXPECT_EQ(back->compileMs, v.compileMs);
  EXPECT_EQ(back->maxAbsErr, v.maxAbsErr);
  EXPECT_EQ(back->maxRelErr, v.maxRelErr);
  EXPECT_EQ(back->trials, v.trials);
  EXPECT_EQ(back->kernelMs, v.kernelMs);
  EXPECT_EQ(back->baselineMs, v.baselineMs);
  EXPECT_EQ(back->speedup, v.speedup);
  EXPECT_EQ(back->launchedKernels, v.launchedKernels);
  EXPECT_EQ(back->gpu, v.gpu);
  EXPECT_EQ(back->driver, v.driver);
  EXPECT_EQ(back->verifierVersion, kVerifierVersion);
  EXPECT_EQ(back->toJson(), text);
}

TEST(Verdict, AbsentMeasurementsAreNull) {
  Verdict v = withStatus(VerdictStatus::Unverified,
                         "no CUDA device: built and analysed, not run");
  v.compileMs = 51234;
  std::string text = v.toJson();
  EXPECT_NE(text.find("\"kernel_ms\":null"), std::string::npos) << text;
  std::string error;
  std::optional<Verdict> back = Verdict::fromJson(text, error);
  ASSERT_TRUE(back) << error;
  EXPECT_FALSE(back->kernelMs);
  EXPECT_EQ(back->compileMs, 51234);
  // Keys may also be left out.
  back = Verdict::fromJson(R"({"fingerprint": "f", "status": "accepted",
      "kernel_ms": 2.0, "baseline_ms": 3.0, "speedup": 1.5})", error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->speedup, 1.5);
}

TEST(Verdict, EveryStatusButAcceptedNeedsAReason) {
  for (auto status : {VerdictStatus::Slow, VerdictStatus::Incorrect,
                      VerdictStatus::Deceptive, VerdictStatus::CompileError,
                      VerdictStatus::Crashed, VerdictStatus::Unverified}) {
    Verdict v = withStatus(status, "");
    if (status == VerdictStatus::Slow)
      v.setTimings(1.0, 0.5);
    EXPECT_EQ(problem(v), std::string(verdictStatusName(status)) +
                              " verdict needs a reason a user can act on");
  }
  Verdict ok = accepted();
  EXPECT_EQ(problem(ok), "") << "accepted needs no reason";
}

TEST(Verdict, AcceptedAndSlowCarryConsistentTimings) {
  for (auto status : {VerdictStatus::Accepted, VerdictStatus::Slow}) {
    Verdict v = withStatus(status, "0.5x the eager baseline");
    std::string name(verdictStatusName(status));
    EXPECT_EQ(problem(v), name + " verdict needs 'kernel_ms'");
    v.kernelMs = 1.0;
    EXPECT_EQ(problem(v), name + " verdict needs 'baseline_ms'");
    v.baselineMs = 0.5;
    EXPECT_EQ(problem(v), name + " verdict needs 'speedup'");
    v.speedup = 0.5;
    EXPECT_EQ(problem(v), "");
    v.speedup = 0.6;
    EXPECT_EQ(problem(v),
              "verdict speedup 0.6 does not match baseline_ms / kernel_ms = 0.5");
    v.speedup = 0.5004; // rounding when written is tolerated
    EXPECT_EQ(problem(v), "");
    v.setTimings(0.0, 0.5);
    v.speedup = 0.0;
    EXPECT_EQ(problem(v), name + " verdict needs a positive 'kernel_ms'");
  }
}

TEST(Verdict, NothingRanMeansNoTimings) {
  for (auto status : {VerdictStatus::CompileError, VerdictStatus::Unverified}) {
    Verdict v = withStatus(status, "line 3: expected ';'");
    v.compileMs = 100; // compiling is not running
    EXPECT_EQ(problem(v), "");
    for (int which = 0; which < 3; ++which) {
      Verdict t = v;
      const char *name = which == 0 ? "kernel_ms" : which == 1 ? "baseline_ms" : "speedup";
      (which == 0 ? t.kernelMs : which == 1 ? t.baselineMs : t.speedup) = 1.0;
      EXPECT_EQ(problem(t), std::string(verdictStatusName(status)) +
                                " verdict cannot carry '" + name +
                                "': no candidate code ran");
    }
  }
  // A crash or a wrong result ran code: timings may be there or not.
  Verdict crashed = withStatus(VerdictStatus::Crashed, "illegal memory access");
  crashed.kernelMs = 3.0;
  EXPECT_EQ(problem(crashed), "");
}

TEST(Verdict, MetricsAreFiniteAndNonNegative) {
  Verdict v = withStatus(VerdictStatus::Incorrect, "max relative error 0.31");
  v.maxRelErr = -0.31;
  EXPECT_EQ(problem(v),
            "verdict metric 'max_rel_err' must be finite and non-negative, got -0.31");
  v.maxRelErr = std::numeric_limits<double>::infinity();
  EXPECT_NE(problem(v).find("must be finite"), std::string::npos);
  v.maxRelErr = 0.31;
  v.trials = -1;
  EXPECT_EQ(problem(v), "verdict metric 'trials' must be non-negative, got -1");
  v.trials = 5;
  v.fingerprint.clear();
  EXPECT_EQ(problem(v), "verdict needs a fingerprint");
}

TEST(Verdict, FromJsonRejectsMalformedVerdicts) {
  std::string error;
  EXPECT_FALSE(Verdict::fromJson("[1, 2]", error));
  EXPECT_EQ(error, "verdict is not a JSON object");
  EXPECT_FALSE(Verdict::fromJson("{not json", error));
  EXPECT_FALSE(Verdict::fromJson(R"({"status": "accepted"})", error));
  EXPECT_EQ(error, "verdict needs 'fingerprint'");
  EXPECT_FALSE(Verdict::fromJson(R"({"fingerprint": "f", "status": "fine"})", error));
  EXPECT_EQ(error, "unknown verdict status 'fine'");
  EXPECT_FALSE(Verdict::fromJson(
      R"({"fingerprint": "f", "status": "crashed", "reason": "x", "speed": 1})", error));
  EXPECT_EQ(error, "unknown verdict key 'speed'");
  EXPECT_FALSE(Verdict::fromJson(
      R"({"fingerprint": "f", "status": "crashed", "reason": "x", "trials": 1.5})", error));
  EXPECT_EQ(error, "verdict metric 'trials' must be an integer");
  EXPECT_FALSE(Verdict::fromJson(
      R"({"fingerprint": "f", "status": "crashed", "reason": "x", "kernel_ms": "1"})", error));
  EXPECT_EQ(error, "verdict metric 'kernel_ms' must be a number");
  // Consistency is checked on the way in, too.
  EXPECT_FALSE(Verdict::fromJson(
      R"({"fingerprint": "f", "status": "deceptive"})", error));
  EXPECT_EQ(error, "deceptive verdict needs a reason a user can act on");
  EXPECT_FALSE(Verdict::fromJson(
      R"({"fingerprint": "f", "status": "compile_error", "reason": "x", "speedup": 2.0})",
      error));
  EXPECT_EQ(error, "compile_error verdict cannot carry 'speedup': no candidate code ran");
}

} // namespace
