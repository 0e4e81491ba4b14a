//===- fuzz_safetensors.cpp - the safetensors header reader ---------------===//
//
// Any file either opens as tensors that lie inside the file, each exactly
// as long as its shape and dtype say, or is an error naming the file; never
// a read past the end (the mapping is touched byte by byte, so ASan and the
// page boundary catch one).
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"

#include "dice/Model/Safetensors.h"

#include <limits>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dice::fuzz::ScratchFile file(".safetensors");
  if (!file.write(data, size))
    return 0;
  dice::Result<std::unique_ptr<dice::SafetensorsFile>> opened =
      dice::SafetensorsFile::open(file.path());
  if (!opened) {
    DICE_FUZZ_CHECK(opened.error().file.find(file.path()) != std::string::npos,
                    "error does not name the file: " + opened.error().format());
    return 0;
  }
  // Volatile: every byte is read, so the compiler cannot drop the loop that
  // lets ASan and the page boundary see a read past the end.
  volatile unsigned checksum = 0;
  size_t total = 0;
  for (const dice::TensorEntry &tensor : (*opened)->tensors()) {
    DICE_FUZZ_CHECK(!tensor.name.empty(), "a tensor without a name");
    size_t elements = 1;
    for (int64_t dim : tensor.shape) {
      DICE_FUZZ_CHECK(dim >= 0, tensor.name + " has a negative dimension");
      DICE_FUZZ_CHECK(dim == 0 || elements <= std::numeric_limits<size_t>::max() /
                                                  static_cast<size_t>(dim),
                      tensor.name + "'s element count overflows");
      elements *= static_cast<size_t>(dim);
    }
    DICE_FUZZ_CHECK(tensor.bytes == elements * dice::elementSize(tensor.dtype),
                    tensor.name + "'s byte length disagrees with its shape");
    DICE_FUZZ_CHECK(tensor.bytes == 0 || tensor.data != nullptr,
                    tensor.name + " has bytes but no data");
    total += tensor.bytes;
    for (size_t i = 0; i < tensor.bytes; ++i)
      checksum = checksum + static_cast<unsigned>(tensor.data[i]);
  }
  DICE_FUZZ_CHECK(total <= size, "tensors hold more bytes than the file");
  return 0;
}
