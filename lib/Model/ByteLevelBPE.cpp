//===- ByteLevelBPE.cpp - byte-level BPE merges ---------------------------===//

#include "ByteLevelBPE.h"

#include "Utf8.h"

#include <algorithm>
#include <climits>
#include <functional>
#include <queue>

namespace dice {
namespace {

/// GPT-2's byte-level alphabet: printable Latin-1 bytes stand for
/// themselves, the other 68 bytes (controls, space, 0x7F-0xA0, soft hyphen)
/// are moved to U+0100.. in byte order, so every token is printable text.
struct ByteLevelAlphabet {
  std::array<std::string, 256> spelling;
  std::array<int16_t, 256 + 68> byteOf;

  ByteLevelAlphabet() {
    byteOf.fill(-1);
    char32_t shifted = 256;
    for (unsigned b = 0; b < 256; ++b) {
      bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) ||
                       (b >= 0xAE && b <= 0xFF);
      char32_t cp = printable ? b : shifted++;
      utf8::appendCodePoint(cp, spelling[b]);
      byteOf[cp] = static_cast<int16_t>(b);
    }
  }
};

const ByteLevelAlphabet &alphabet() {
  static const ByteLevelAlphabet instance;
  return instance;
}

/// Pieces longer than this are merged with a heap instead of by rescanning,
/// and are not cached (long whitespace runs, separators, blobs).
constexpr size_t kShortPiece = 64;
constexpr size_t kCacheCapacity = 1 << 16;

} // namespace

std::string toByteLevel(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes)
    out += alphabet().spelling[b];
  return out;
}

bool fromByteLevel(std::string_view spelling, std::string &bytes) {
  bytes.clear();
  const ByteLevelAlphabet &a = alphabet();
  for (size_t pos = 0; pos < spelling.size();) {
    utf8::Step s = utf8::step(spelling, pos);
    if (!s.valid || s.length > 2)
      return false; // the alphabet lies below U+0800
    unsigned cp = static_cast<unsigned char>(spelling[pos]);
    if (s.length == 2)
      cp = ((cp & 0x1F) << 6) | (static_cast<unsigned char>(spelling[pos + 1]) & 0x3F);
    if (cp >= a.byteOf.size() || a.byteOf[cp] < 0)
      return false;
    bytes.push_back(static_cast<char>(a.byteOf[cp]));
    pos += s.length;
  }
  return true;
}

void MergeTable::reserve(size_t wanted) {
  size_t capacity = 16;
  while (capacity < wanted * 2)
    capacity *= 2;
  if (capacity <= slots.size())
    return;
  std::vector<Slot> old = std::move(slots);
  slots.assign(capacity, Slot{kEmpty, {0, 0}});
  mask = capacity - 1;
  count = 0;
  for (const Slot &slot : old)
    if (slot.key != kEmpty)
      insert(int32_t(slot.key >> 32), int32_t(slot.key & 0xFFFFFFFF), slot.merge);
}

void MergeTable::grow() { reserve(std::max<size_t>(16, slots.size())); }

void MergeTable::insert(int32_t left, int32_t right, Merge merge) {
  if ((count + 1) * 2 > slots.size())
    grow();
  uint64_t key = makeKey(left, right);
  for (uint64_t i = hash(key) & mask;; i = (i + 1) & mask) {
    Slot &slot = slots[i];
    if (slot.key == kEmpty) {
      slot = {key, merge};
      ++count;
      return;
    }
    if (slot.key == key) {
      slot.merge = merge;
      return;
    }
  }
}

void BytePairEncoder::setTables(const std::array<int32_t, 256> &ids,
                                MergeTable table) {
  byteIds = ids;
  merges = std::move(table);
  std::lock_guard<std::mutex> lock(cacheMutex);
  cache.clear();
}

void BytePairEncoder::encode(std::string_view piece,
                             std::vector<int32_t> &out) const {
  if (piece.size() == 1) {
    out.push_back(byteIds[static_cast<unsigned char>(piece[0])]);
    return;
  }
  bool cacheable = piece.size() <= kShortPiece;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cacheMutex);
    auto it = cache.find(piece);
    if (it != cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> symbols;
  symbols.reserve(piece.size());
  for (unsigned char b : piece)
    symbols.push_back(byteIds[b]);
  if (cacheable)
    mergeShort(symbols);
  else
    mergeLong(symbols);
  out.insert(out.end(), symbols.begin(), symbols.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cacheMutex);
    if (cache.size() >= kCacheCapacity)
      cache.clear();
    cache.emplace(piece, std::move(symbols));
  }
}

// Both merge loops apply, at each step, the lowest-ranked pair present,
// leftmost first; this is what makes the ids agree with the reference BPE.

void BytePairEncoder::mergeShort(std::vector<int32_t> &symbols) const {
  auto rankOf = [&](size_t i) {
    const MergeTable::Merge *m = merges.find(symbols[i], symbols[i + 1]);
    return m ? m->rank : INT32_MAX;
  };
  std::vector<int32_t> ranks(symbols.size() - 1);
  for (size_t i = 0; i + 1 < symbols.size(); ++i)
    ranks[i] = rankOf(i);
  while (!ranks.empty()) {
    auto best = std::min_element(ranks.begin(), ranks.end());
    if (*best == INT32_MAX)
      break;
    size_t i = best - ranks.begin();
    symbols[i] = merges.find(symbols[i], symbols[i + 1])->merged;
    symbols.erase(symbols.begin() + i + 1);
    ranks.erase(ranks.begin() + i);
    if (i > 0)
      ranks[i - 1] = rankOf(i - 1);
    if (i < ranks.size())
      ranks[i] = rankOf(i);
  }
}

void BytePairEncoder::mergeLong(std::vector<int32_t> &symbols) const {
  // A doubly linked list of symbols and a heap of candidate merges ordered
  // by (rank, position). A merge invalidates the entries of its neighbours;
  // stale entries are recognised on pop because a symbol's id changed.
  struct Node {
    int32_t id, prev, next;
  };
  struct Candidate {
    int32_t rank, pos, left, right, merged;
    bool operator>(const Candidate &o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  int32_t n = static_cast<int32_t>(symbols.size());
  std::vector<Node> nodes(n);
  for (int32_t i = 0; i < n; ++i)
    nodes[i] = {symbols[i], i - 1, i + 1 < n ? i + 1 : -1};
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto push = [&](int32_t pos) {
    int32_t next = nodes[pos].next;
    if (next < 0)
      return;
    if (const MergeTable::Merge *m = merges.find(nodes[pos].id, nodes[next].id))
      heap.push({m->rank, pos, nodes[pos].id, nodes[next].id, m->merged});
  };
  for (int32_t i = 0; i + 1 < n; ++i)
    push(i);
  while (!heap.empty()) {
    Candidate c = heap.top();
    heap.pop();
    Node &left = nodes[c.pos];
    if (left.id != c.left || left.next < 0 || nodes[left.next].id != c.right)
      continue;
    Node &right = nodes[left.next];
    left.id = c.merged;
    left.next = right.next;
    if (right.next >= 0)
      nodes[right.next].prev = c.pos;
    right.id = -1;
    if (left.prev >= 0)
      push(left.prev);
    push(c.pos);
  }
  symbols.clear();
  for (int32_t i = 0; i >= 0; i = nodes[i].next)
    symbols.push_back(nodes[i].id);
}

} // namespace dice
