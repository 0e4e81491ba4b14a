//===- fuzz_config.cpp - the dice.toml loader -----------------------------===//
//
// Any text either parses into a Config whose every number lies inside the
// range the loader documents (so no NaN or infinity slips past a range
// check), or is an error naming the file.
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"

#include "dice/Config/Config.h"

#include <cmath>

namespace {

bool within(double value, double lo, double hi) {
  return std::isfinite(value) && value >= lo && value <= hi;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dice::Result<dice::Config> config =
      dice::parseConfig(dice::fuzz::asText(data, size), "fuzz.toml");
  if (!config) {
    const dice::Error &error = config.error();
    DICE_FUZZ_CHECK(error.file == "fuzz.toml", error.format());
    DICE_FUZZ_CHECK(!error.message.empty(), error.format());
    return 0;
  }
  const dice::SamplingConfig &s = config->sampling;
  DICE_FUZZ_CHECK(s.blockLength >= 1 && s.denoisingSteps >= 1,
                  "block length and steps must be positive");
  DICE_FUZZ_CHECK(within(s.threshold, 0, 1), "threshold out of [0, 1]");
  DICE_FUZZ_CHECK(within(s.temperature, 0, 1e300), "temperature not finite");
  DICE_FUZZ_CHECK(within(s.topP, 0, 1), "top_p out of [0, 1]");
  DICE_FUZZ_CHECK(s.topK >= 0 && s.maxTokens >= 1 && s.candidates >= 1,
                  "sampling counts out of range");
  const dice::VerifierConfig &v = config->verifier;
  DICE_FUZZ_CHECK(v.trials >= 1 && v.timingRuns >= 1 && v.workers >= 0,
                  "verifier counts out of range");
  for (double tolerance : {v.atol, v.rtol, v.halfAtol, v.halfRtol})
    DICE_FUZZ_CHECK(within(tolerance, 0, 1), "tolerance out of [0, 1]");
  DICE_FUZZ_CHECK(within(v.minSpeedup, 0, 1e300) && v.minSpeedup > 0,
                  "min_speedup not a positive number");
  DICE_FUZZ_CHECK(within(v.timeoutSeconds, 0, 86400) && v.timeoutSeconds > 0,
                  "timeout_s out of (0, 86400]");
  return 0;
}
