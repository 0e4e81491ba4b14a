//===- fuzz_extraction.cpp - the candidate-source extractor ---------------===//
//
// Any model output either yields a CUDA source with the line it starts on,
// or a reason naming what is wrong; the scaffold's signature parser either
// gives parameters that are C++ identifiers or an error.
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"

#include "dice/VerifierCore/Extraction.h"
#include "dice/VerifierCore/ForwardSignature.h"

#include <algorithm>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text = dice::fuzz::asText(data, size);
  dice::ExtractionResult extracted = dice::extractCandidateSource(text);
  if (extracted.ok()) {
    DICE_FUZZ_CHECK(extracted.reason.empty(), extracted.reason);
    size_t lines = std::count(text.begin(), text.end(), '\n') + 1;
    DICE_FUZZ_CHECK(extracted.line >= 1 && extracted.line <= lines,
                    "the source's line is outside the output");
    DICE_FUZZ_CHECK(!extracted.variable.empty(), "no variable named");
  } else {
    DICE_FUZZ_CHECK(!extracted.reason.empty(), "a failure needs a reason");
    DICE_FUZZ_CHECK(!dice::extractionStatusName(extracted.status).empty(),
                    "unnamed extraction status");
  }

  dice::Result<dice::DiceForwardSignature> signature =
      dice::parseDiceForwardSignature(text);
  if (signature) {
    for (const std::string &name : signature->parameters)
      DICE_FUZZ_CHECK(dice::isIdentifier(name), "parameter '" + name +
                                                   "' is not an identifier");
    DICE_FUZZ_CHECK(!signature->declaration.empty() &&
                        signature->declaration.back() == ';',
                    "normalised declaration must end in ';'");
    // The normalised form is itself a signature, with the same parameters.
    dice::Result<dice::DiceForwardSignature> again =
        dice::parseDiceForwardSignature(signature->declaration);
    DICE_FUZZ_CHECK(again && again->parameters == signature->parameters &&
                        again->returnsList == signature->returnsList,
                    "the normalised declaration does not parse the same");
  } else {
    DICE_FUZZ_CHECK(!signature.error().message.empty(), "an error needs a message");
  }
  return 0;
}
