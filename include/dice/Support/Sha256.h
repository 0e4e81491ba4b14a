//===- Sha256.h - SHA-256 of a byte string ----------------------*- C++ -*-===//
//
// Content addresses: kernel request fingerprints, the kernel build cache and
// verdict candidate hashes.
// Plain C++ so the GPU worker, which has no LLVM, computes the same digests
// as the compiler.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_SUPPORT_SHA256_H
#define DICE_SUPPORT_SHA256_H

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace dice {

/// Incremental SHA-256 (FIPS 180-4).
class Sha256 {
public:
  Sha256();
  void update(std::string_view bytes);
  /// Feeds a length-prefixed field, so that ("ab", "c") and ("a", "bc")
  /// hash differently when several fields make one key.
  void updateField(std::string_view bytes);
  std::array<uint8_t, 32> finish();
  /// finish() as 64 lower-case hex digits.
  std::string finishHex();

private:
  void compress(const uint8_t *block);

  std::array<uint32_t, 8> state;
  std::array<uint8_t, 64> buffer;
  size_t buffered = 0;
  uint64_t totalBytes = 0;
};

/// The hex SHA-256 of `bytes`.
std::string sha256Hex(std::string_view bytes);

} // namespace dice

#endif // DICE_SUPPORT_SHA256_H
