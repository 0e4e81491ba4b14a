//===- BaselineTimesTest.cpp - the measured times the verifier is given --===//

#include "dice/Verifier/BaselineTimes.h"

#include <gtest/gtest.h>

using namespace dice;

TEST(BaselineTimes, ReadsEachFingerprintsTimes) {
  Result<BaselineTimes> times = parseBaselineTimes(
      R"({"version": 1, "times": {
            "3f9a0c1d2e4b5a69": {"inductor_ms": 0.012, "eager_ms": 0.025},
            "00000000000000aa": {"inductor_ms": 2, "eager_ms": 3.5}}})",
      "t.json");
  ASSERT_TRUE(times) << times.error().format();
  ASSERT_EQ(times->size(), 2u);
  EXPECT_DOUBLE_EQ(*times->at("3f9a0c1d2e4b5a69").inductorMs, 0.012);
  EXPECT_DOUBLE_EQ(*times->at("3f9a0c1d2e4b5a69").eagerMs, 0.025);
  EXPECT_DOUBLE_EQ(*times->at("00000000000000aa").inductorMs, 2.0);
}

TEST(BaselineTimes, EitherTimeMayBeAbsent) {
  Result<BaselineTimes> times = parseBaselineTimes(
      R"({"version": 1, "times": {"aa": {"eager_ms": 0.5},
                                 "bb": {"inductor_ms": 0.25}}})",
      "t.json");
  ASSERT_TRUE(times) << times.error().format();
  EXPECT_DOUBLE_EQ(*times->at("aa").eagerMs, 0.5);
  EXPECT_FALSE(times->at("aa").inductorMs);
  EXPECT_DOUBLE_EQ(*times->at("bb").inductorMs, 0.25);
  EXPECT_FALSE(times->at("bb").eagerMs);
}

TEST(BaselineTimes, ErrorsNameTheFileAndKey) {
  struct Case {
    const char *text, *key, *message;
  } cases[] = {
      {"[1, 2]", "", "not a JSON object"},
      {"{\"times\": {}}", "version", "must be 1"},
      {"{\"version\": 2, \"times\": {}}", "version", "must be 1"},
      {"{\"version\": 1}", "times", "must be an object"},
      {R"({"version": 1, "times": {"ab": 3}})", "times.ab", "must be an object"},
      {R"({"version": 1, "times": {"ab": {}}})", "times.ab",
       "needs inductor_ms or eager_ms"},
      {R"({"version": 1, "times": {"ab": {"eager_ms": "1"}}})",
       "times.ab.eager_ms", "must be a number"},
      {R"({"version": 1, "times": {"ab": {"inductor_ms": 0, "eager_ms": 1}}})",
       "times.ab.inductor_ms", "positive"},
      {R"({"version": 1, "times": {"ab": {"inductor_ms": 1, "eager_ms": -2}}})",
       "times.ab.eager_ms", "positive"},
      {"{\"version\": 1, \"times\": {", "", "not a JSON object"},
  };
  for (const Case &c : cases) {
    Result<BaselineTimes> times = parseBaselineTimes(c.text, "t.json");
    ASSERT_FALSE(times) << c.text;
    EXPECT_EQ(times.error().file, "t.json");
    EXPECT_EQ(times.error().key, c.key) << c.text;
    EXPECT_NE(times.error().message.find(c.message), std::string::npos)
        << c.text << ": " << times.error().message;
  }
}

TEST(BaselineTimes, UnreadableFileIsAnError) {
  Result<BaselineTimes> times = loadBaselineTimes("/nonexistent/times.json");
  ASSERT_FALSE(times);
  EXPECT_EQ(times.error().file, "/nonexistent/times.json");
}
