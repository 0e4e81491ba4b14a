//===- ByteLevelBPE.h - byte-level BPE merges -------------------*- C++ -*-===//
//
// The model half of a GPT-2-style byte-level BPE: every byte starts as its
// own token, then adjacent pairs merge in the order of merges.txt. Also the
// byte-level alphabet through which vocab.json and merges.txt spell bytes as
// printable characters.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_MODEL_BYTELEVELBPE_H
#define DICE_MODEL_BYTELEVELBPE_H

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dice {

/// Hashes std::string keys so that lookups by std::string_view need no copy.
struct TransparentStringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const {
    return std::hash<std::string_view>()(s);
  }
};

/// The byte-level spelling of raw bytes (byte 0x20 is "Ġ", 0x0A is "Ċ", ...).
std::string toByteLevel(std::string_view bytes);

/// The raw bytes a byte-level spelling stands for; false when `spelling`
/// holds a character outside the 256-character alphabet (then `bytes` is
/// unspecified).
bool fromByteLevel(std::string_view spelling, std::string &bytes);

/// Pair of token ids -> (rank, merged id), as an open-addressing hash table:
/// the lookup is the inner loop of encoding.
class MergeTable {
public:
  struct Merge {
    int32_t rank;
    int32_t merged;
  };

  void reserve(size_t count);
  /// A later merge of the same pair replaces an earlier one.
  void insert(int32_t left, int32_t right, Merge merge);
  const Merge *find(int32_t left, int32_t right) const {
    if (slots.empty())
      return nullptr;
    uint64_t key = makeKey(left, right);
    for (uint64_t i = hash(key) & mask;; i = (i + 1) & mask) {
      const Slot &slot = slots[i];
      if (slot.key == key)
        return &slot.merge;
      if (slot.key == kEmpty)
        return nullptr;
    }
  }
  size_t size() const { return count; }

private:
  struct Slot {
    uint64_t key;
    Merge merge;
  };
  static constexpr uint64_t kEmpty = ~uint64_t(0);
  static uint64_t makeKey(int32_t left, int32_t right) {
    return (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
  }
  static uint64_t hash(uint64_t key) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return key;
  }
  void grow();

  std::vector<Slot> slots;
  uint64_t mask = 0;
  size_t count = 0;
};

/// Applies the merges to one pre-tokenized piece.
class BytePairEncoder {
public:
  /// `byteIds[b]` is the id of the token of byte b alone.
  void setTables(const std::array<int32_t, 256> &byteIds, MergeTable merges);

  /// Appends the ids of `piece` (raw bytes) to `out`.
  void encode(std::string_view piece, std::vector<int32_t> &out) const;

  int32_t byteId(unsigned char byte) const { return byteIds[byte]; }

private:
  void mergeShort(std::vector<int32_t> &symbols) const;
  void mergeLong(std::vector<int32_t> &symbols) const;

  std::array<int32_t, 256> byteIds{};
  MergeTable merges;

  /// Pieces repeat (keywords, indentation, common words): remember their
  /// ids. Bounded; cleared when full.
  mutable std::mutex cacheMutex;
  mutable std::unordered_map<std::string, std::vector<int32_t>,
                             TransparentStringHash, std::equal_to<>>
      cache;
};

} // namespace dice

#endif // DICE_MODEL_BYTELEVELBPE_H
