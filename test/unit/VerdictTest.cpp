//===- VerdictTest.cpp - verdict JSON and its consistency rules -----------===//

#include "dice/VerifierCore/Verdict.h"

#include "dice/VerifierCore/VerdictNumbers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

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

double fromBits(uint64_t bits) {
  double value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

uint64_t bitsOf(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

/// The error of a failed fromJson, as "key: message".
std::string failure(std::string_view text) {
  Result<Verdict> v = Verdict::fromJson(text);
  if (v)
    return "parsed";
  return v.error().key + ": " + v.error().message;
}

TEST(Verdict, StatusNamesRoundTrip) {
  for (auto status :
       {VerdictStatus::Accepted, VerdictStatus::Slow, VerdictStatus::Incorrect,
        VerdictStatus::Deceptive, VerdictStatus::CompileError,
        VerdictStatus::Crashed, VerdictStatus::Unverified})
    EXPECT_EQ(parseVerdictStatus(verdictStatusName(status)), status);
  EXPECT_EQ(verdictStatusName(VerdictStatus::CompileError), "compile_error");
  EXPECT_FALSE(parseVerdictStatus("ok"));
  EXPECT_EQ(verdictStatusNames(), "accepted, slow, incorrect, deceptive, "
                                  "compile_error, crashed, unverified");
}

TEST(Verdict, JsonRoundTripKeepsEveryField) {
  Verdict v = accepted();
  ASSERT_EQ(problem(v), "");
  std::string text = v.toJson();
  EXPECT_EQ(text.find('\n'), std::string::npos) << "one line per verdict";
  EXPECT_EQ(text.rfind("{\"fingerprint\":", 0), 0u) << text;
  Result<Verdict> back = Verdict::fromJson(text);
  ASSERT_TRUE(back) << back.error().format();
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

TEST(Verdict, BaselinesRecordEveryTimeAndWhichDecided) {
  Verdict v = accepted();
  v.baselines = {{"reference", 0.31}, {"eager", 0.12}, {"inductor", 0.09}};
  v.baseline = "inductor";
  v.setTimings(0.045, 0.09);
  ASSERT_EQ(problem(v), "");
  std::string text = v.toJson();
  EXPECT_NE(text.find(R"("baselines":{"eager":0.12,"inductor":0.09,"reference":0.31},"baseline":"inductor")"),
            std::string::npos)
      << text;
  Result<Verdict> back = Verdict::fromJson(text);
  ASSERT_TRUE(back) << back.error().format();
  EXPECT_EQ(back->baselines, v.baselines);
  EXPECT_EQ(back->baseline, "inductor");
  EXPECT_EQ(back->toJson(), text);
}

TEST(Verdict, AbsentMeasurementsAreNull) {
  Verdict v = withStatus(VerdictStatus::Unverified,
                         "no CUDA device: built and analysed, not run");
  v.compileMs = 51234;
  std::string text = v.toJson();
  EXPECT_NE(text.find("\"kernel_ms\":null"), std::string::npos) << text;
  Result<Verdict> back = Verdict::fromJson(text);
  ASSERT_TRUE(back) << back.error().format();
  EXPECT_FALSE(back->kernelMs);
  EXPECT_EQ(back->compileMs, 51234);
  // Keys may also be left out.
  back = Verdict::fromJson(R"({"fingerprint": "f", "status": "accepted",
      "kernel_ms": 2.0, "baseline_ms": 3.0, "speedup": 1.5})");
  ASSERT_TRUE(back) << back.error().format();
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

TEST(Verdict, MetricsAreNonNegativeAndTimingsFinite) {
  Verdict v = withStatus(VerdictStatus::Incorrect, "max relative error 0.31");
  v.maxRelErr = -0.31;
  EXPECT_EQ(problem(v),
            "verdict metric 'max_rel_err' must be non-negative, got -0.31");
  v.maxRelErr = -std::numeric_limits<double>::infinity();
  EXPECT_EQ(problem(v),
            "verdict metric 'max_rel_err' must be non-negative, got -inf");
  // An incorrect candidate's error may be unbounded or undefined.
  v.maxRelErr = std::numeric_limits<double>::infinity();
  v.maxAbsErr = std::nan("");
  EXPECT_EQ(problem(v), "");
  v.kernelMs = std::numeric_limits<double>::infinity();
  EXPECT_EQ(problem(v),
            "verdict metric 'kernel_ms' must be finite and non-negative, got inf");
  v.kernelMs.reset();
  v.trials = -1;
  EXPECT_EQ(problem(v), "verdict metric 'trials' must be non-negative, got -1");
  v.trials = 5;
  v.fingerprint.clear();
  EXPECT_EQ(problem(v), "verdict needs a fingerprint");

  // Results that matched the reference have finite errors.
  Verdict ok = accepted();
  ok.maxAbsErr = std::numeric_limits<double>::infinity();
  EXPECT_EQ(problem(ok), "accepted verdict needs a finite 'max_abs_err': its "
                         "results matched the reference");
}

TEST(Verdict, NonFiniteSpellings) {
  double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(nonFiniteSpelling(inf), "inf");
  EXPECT_EQ(nonFiniteSpelling(-inf), "-inf");
  EXPECT_EQ(nonFiniteSpelling(fromBits(0x7ff8000000000000)), "nan");
  EXPECT_EQ(nonFiniteSpelling(fromBits(0xfff8000000000000)), "-nan");
  EXPECT_EQ(nonFiniteSpelling(fromBits(0x7ff0000000000001)), "0x7ff0000000000001");
  EXPECT_EQ(nonFiniteSpelling(0.5), "");
  EXPECT_EQ(bitsOf(*parseNonFiniteSpelling("-nan")), 0xfff8000000000000u);
  EXPECT_EQ(bitsOf(*parseNonFiniteSpelling("0x7FF4000000000000")),
            0x7ff4000000000000u);
  // Hex spells a NaN's bits only; anything else is not a spelling.
  EXPECT_FALSE(parseNonFiniteSpelling("0x3ff0000000000000"));
  EXPECT_FALSE(parseNonFiniteSpelling("Infinity"));
  EXPECT_FALSE(parseNonFiniteSpelling("0x7ff8"));
  EXPECT_FALSE(parseNonFiniteSpelling(""));
}

TEST(Verdict, JsonKeepsEveryDoubleExactly) {
  const uint64_t bits[] = {
      0x7ff0000000000000, // inf
      0x7ff8000000000000, // nan
      0xfff8000000000000, // -nan, what x86 computes for 0/0
      0x7ff4000000000001, // a signalling NaN with a payload
      0x0000000000000001, // the smallest subnormal, 4.9406564584124654e-324
      0x000fffffffffffff, // the largest subnormal
      0x7fefffffffffffff, // the largest finite double
      0x01a56e1fc2f8f359, // 1e-300
      0x3fd3333333333334, // 0.30000000000000004
      0x8000000000000000, // -0.0
  };
  for (uint64_t b : bits) {
    Verdict v = withStatus(VerdictStatus::Incorrect, "outputs differ");
    v.maxAbsErr = fromBits(b);
    v.maxRelErr = fromBits(b);
    v.compileMs = 1e-300;
    std::string text = v.toJson();
    Result<Verdict> back = Verdict::fromJson(text);
    // -0.0 is not negative; every bit pattern here is a valid error.
    ASSERT_TRUE(back) << text << ": " << back.error().format();
    EXPECT_EQ(bitsOf(*back->maxAbsErr), b) << text;
    EXPECT_EQ(bitsOf(*back->maxRelErr), b) << text;
    EXPECT_EQ(bitsOf(*back->compileMs), 0x01a56e1fc2f8f359u) << text;
    EXPECT_EQ(back->toJson(), text);
  }
}

TEST(Verdict, JsonSpellsNonFiniteNumbersAsStrings) {
  Verdict v = withStatus(VerdictStatus::Incorrect, "output 0 is NaN");
  v.maxAbsErr = std::numeric_limits<double>::infinity();
  v.maxRelErr = fromBits(0x7ff8000000000000);
  std::string text = v.toJson();
  EXPECT_NE(text.find(R"("max_abs_err":"inf")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("max_rel_err":"nan")"), std::string::npos) << text;
  Result<Verdict> back = Verdict::fromJson(
      R"({"fingerprint": "f", "status": "incorrect", "reason": "x",
          "max_abs_err": "inf", "max_rel_err": "-nan", "compile_ms": 5e-324})");
  ASSERT_TRUE(back) << back.error().format();
  EXPECT_TRUE(std::isinf(*back->maxAbsErr));
  EXPECT_EQ(bitsOf(*back->maxRelErr), 0xfff8000000000000u);
  EXPECT_EQ(bitsOf(*back->compileMs), 1u);
}

TEST(Verdict, FromJsonRejectsMalformedVerdictsAtTheirField) {
  EXPECT_EQ(failure("[1, 2]"), ": verdict is not a JSON object");
  EXPECT_EQ(failure("{not json"), ": verdict is not valid JSON");
  EXPECT_EQ(failure(R"({"status": "accepted"})"),
            "fingerprint: verdict needs 'fingerprint'");
  EXPECT_EQ(failure(R"({"fingerprint": "", "status": "accepted"})"),
            "fingerprint: verdict needs a fingerprint");
  EXPECT_EQ(failure(R"({"fingerprint": 7, "status": "accepted"})"),
            "fingerprint: verdict 'fingerprint' must be a string");
  EXPECT_EQ(failure(R"({"fingerprint": "f", "status": "fine"})"),
            "status: unknown verdict status 'fine'; expected one of accepted, "
            "slow, incorrect, deceptive, compile_error, crashed, unverified");
  EXPECT_EQ(failure(R"({"fingerprint": "f", "status": "crashed", "reason": "x", "speed": 1})"),
            "speed: unknown verdict key 'speed'");
  EXPECT_EQ(failure(R"({"fingerprint": "f", "status": "crashed", "reason": "x", "trials": 1.5})"),
            "trials: verdict metric 'trials' must be an integer");
  EXPECT_EQ(failure(R"({"fingerprint": "f", "status": "crashed", "reason": "x", "kernel_ms": "1"})"),
            "kernel_ms: verdict metric 'kernel_ms' must be a number, \"inf\", "
            "\"-inf\" or \"nan\"");
  EXPECT_EQ(failure(R"({"fingerprint": "f", "status": "crashed", "reason": "x", "max_rel_err": "Infinity"})"),
            "max_rel_err: verdict metric 'max_rel_err' must be a number, "
            "\"inf\", \"-inf\" or \"nan\"");
  EXPECT_EQ(failure(R"({"fingerprint": "f", "status": "crashed", "reason": "x", "verifier_version": "1"})"),
            "verifier_version: verdict 'verifier_version' must be an integer");
  EXPECT_EQ(failure(R"({"fingerprint": "f", "status": "crashed", "reason": "x", "baselines": [1]})"),
            "baselines: verdict 'baselines' must be an object of names and "
            "times in ms");
  EXPECT_EQ(failure(R"({"fingerprint": "f", "status": "crashed", "reason": "x", "baselines": {"eager": -1}})"),
            "baselines: verdict baseline 'eager' must be a finite time >= 0");
  EXPECT_EQ(failure(R"({"fingerprint": "f", "status": "crashed", "reason": "x", "baseline": "eager"})"),
            "baseline: verdict 'baseline' names 'eager', which 'baselines' "
            "does not hold");
  EXPECT_EQ(failure(R"({"fingerprint": "f", "status": "slow", "reason": "x", "kernel_ms": 2.0,
      "baseline_ms": 1.0, "speedup": 0.5, "baselines": {"eager": 1.5}, "baseline": "eager"})"),
            "baseline_ms: verdict 'baseline_ms' is not the time of its "
            "'baseline', 'eager'");
  // Consistency is checked on the way in, too, at the field at fault.
  EXPECT_EQ(failure(R"({"fingerprint": "f", "status": "deceptive"})"),
            "reason: deceptive verdict needs a reason a user can act on");
  EXPECT_EQ(failure(R"({"fingerprint": "f", "status": "compile_error", "reason": "x", "speedup": 2.0})"),
            "speedup: compile_error verdict cannot carry 'speedup': no "
            "candidate code ran");
  EXPECT_EQ(failure(R"({"fingerprint": "f", "status": "crashed", "reason": "x", "kernel_ms": "inf"})"),
            "kernel_ms: verdict metric 'kernel_ms' must be finite and "
            "non-negative, got inf");
}

} // namespace
