//===- fuzz_formats.cpp - the JSON formats between the tools --------------===//
//
// The verdict JSON, the reference program JSON and the baseline-times file
// cross process and machine boundaries. Each either reads into a value whose
// JSON form reads back to the same JSON (every float, infinities and NaN
// included, round-trips exactly), or is an error; never a half-built value.
// The first byte picks the format, the rest is the text.
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"

#include "dice/Reference/ReferenceProgram.h"
#include "dice/Verifier/BaselineTimes.h"
#include "dice/VerifierCore/Verdict.h"

#include <cmath>

namespace {

void verdict(std::string_view text) {
  dice::Result<dice::Verdict> parsed = dice::Verdict::fromJson(text);
  if (!parsed)
    return;
  DICE_FUZZ_CHECK(parsed->validate().empty(),
                  "fromJson returned an invalid verdict: " + parsed->validate());
  std::string json = parsed->toJson();
  dice::Result<dice::Verdict> again = dice::Verdict::fromJson(json);
  DICE_FUZZ_CHECK(static_cast<bool>(again),
                  "toJson's output does not read back: " + again.error().format() +
                      "\n  " + json);
  DICE_FUZZ_CHECK(again->toJson() == json, "verdict JSON is not a fixed point:\n  " +
                                               json + "\n  " + again->toJson());
}

void referenceProgram(std::string_view text) {
  dice::Result<dice::ReferenceProgram> parsed =
      dice::ReferenceProgram::fromJson(text);
  if (!parsed)
    return;
  DICE_FUZZ_CHECK(parsed->validate().empty(),
                  "fromJson returned an invalid program: " + parsed->validate());
  std::string json = parsed->toJson();
  dice::Result<dice::ReferenceProgram> again =
      dice::ReferenceProgram::fromJson(json);
  DICE_FUZZ_CHECK(static_cast<bool>(again),
                  "toJson's output does not read back: " + again.error().format() +
                      "\n  " + json);
  DICE_FUZZ_CHECK(again->toJson() == json,
                  "program JSON is not a fixed point:\n  " + json + "\n  " +
                      again->toJson());
  // The printer the model is shown must not fail on what validate() accepts.
  (void)dice::renderPythonModel(*parsed);
}

void baselineTimes(std::string_view text) {
  dice::Result<dice::BaselineTimes> parsed =
      dice::parseBaselineTimes(std::string(text), "baseline_times.json");
  if (!parsed) {
    DICE_FUZZ_CHECK(parsed.error().file == "baseline_times.json",
                    parsed.error().format());
    return;
  }
  // A time is what the verifier divides by: positive and finite.
  for (const auto &[fingerprint, time] : *parsed)
    for (std::optional<double> ms : {time.inductorMs, time.eagerMs})
      DICE_FUZZ_CHECK(!ms || (std::isfinite(*ms) && *ms > 0),
                      "time of " + fingerprint + " is not a positive number");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  std::string_view text = dice::fuzz::asText(data + 1, size - 1);
  switch (data[0] % 3) {
  case 0:
    verdict(text);
    break;
  case 1:
    referenceProgram(text);
    break;
  default:
    baselineTimes(text);
    break;
  }
  return 0;
}
