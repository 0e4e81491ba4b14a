//===- fuzz_manifest.cpp - the manifest dice-lower writes -----------------===//
//
// Any text is a manifest or a located error; a manifest that parses prints
// to text that parses back to the same manifest (print is a fixed point).
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"

#include "dice/Runtime/Manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dice::Result<dice::Manifest> manifest =
      dice::parseManifest(dice::fuzz::asText(data, size), "manifest.json");
  if (!manifest) {
    DICE_FUZZ_CHECK(manifest.error().file == "manifest.json",
                    manifest.error().format());
    return 0;
  }
  dice::Result<std::string> printed = dice::printManifest(*manifest);
  DICE_FUZZ_CHECK(static_cast<bool>(printed),
                  "a parsed manifest must print: " + printed.error().format());
  dice::Result<dice::Manifest> again = dice::parseManifest(*printed, "printed");
  DICE_FUZZ_CHECK(static_cast<bool>(again),
                  "a printed manifest must parse: " + again.error().format());
  dice::Result<std::string> reprinted = dice::printManifest(*again);
  DICE_FUZZ_CHECK(reprinted && *reprinted == *printed,
                  "print(parse(print(m))) differs from print(m)");
  return 0;
}
