//===- TokenizerTest.cpp - the Qwen2 byte-level BPE tokenizer -------------===//
//
// Most tests use a tiny tokenizer folder written here. Those marked "folder
// under test" use the SDAR/DICE tokenizer when DICE_SDAR_DIR names it, and the
// tiny one otherwise, so they run everywhere. Agreement with transformers on
// a large corpus is test/python/test_tokenizer_parity.py's job.
//
//===----------------------------------------------------------------------===//

#include "dice/Model/Tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

using namespace dice;
namespace fs = std::filesystem;

namespace {

/// The byte-level alphabet of vocab.json: printable Latin-1 bytes as
/// themselves, the other 68 bytes as U+0100 onwards in byte order.
std::string byteLevel(unsigned char byte) {
  static std::vector<std::string> spelling = [] {
    std::vector<std::string> out(256);
    unsigned shifted = 256;
    for (unsigned b = 0; b < 256; ++b) {
      bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) ||
                       (b >= 0xAE && b <= 0xFF);
      unsigned cp = printable ? b : shifted++;
      if (cp < 0x80) {
        out[b] = std::string(1, static_cast<char>(cp));
      } else {
        out[b] = {static_cast<char>(0xC0 | (cp >> 6)),
                  static_cast<char>(0x80 | (cp & 0x3F))};
      }
    }
    return out;
  }();
  return spelling[byte];
}

/// JSON string literal of a byte-level spelling (only `"` and `\` to escape).
std::string quoted(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

void writeFile(const fs::path &path, const std::string &text) {
  std::ofstream(path, std::ios::binary) << text;
}

/// A folder with the files of a tiny Qwen2-style tokenizer: the 256 byte
/// tokens (id = byte), merges spelling "hello" and " world", and added
/// tokens 300..304.
class TinyFolder {
public:
  TinyFolder() {
    std::string pattern = (fs::temp_directory_path() / "dice-tok-XXXXXX").string();
    dir = mkdtemp(pattern.data());
    std::string vocab = "{";
    for (unsigned b = 0; b < 256; ++b)
      vocab += quoted(byteLevel(b)) + ": " + std::to_string(b) + ",\n";
    // Merges in rank order: he, ll, hell, hello, Ġw, or, Ġwor, ld, Ġworld.
    const char *merges[][2] = {{"h", "e"},   {"l", "l"},    {"he", "ll"},
                               {"hell", "o"}, {"Ġ", "w"},    {"o", "r"},
                               {"Ġw", "or"},  {"l", "d"},    {"Ġwor", "ld"}};
    std::string mergesText = "#version: 0.2\n";
    int32_t id = 256;
    for (auto &m : merges) {
      vocab += quoted(std::string(m[0]) + m[1]) + ": " + std::to_string(id++) + ",\n";
      mergesText += std::string(m[0]) + " " + m[1] + "\n";
    }
    vocab.resize(vocab.size() - 2);
    vocab += "}\n";
    write("vocab.json", vocab);
    write("merges.txt", mergesText);
    write("tokenizer_config.json", R"({
  "added_tokens_decoder": {
    "300": {"content": "<|im_start|>", "special": true, "lstrip": false},
    "301": {"content": "<|im_end|>", "special": true},
    "302": {"content": "<|endoftext|>", "special": true},
    "303": {"content": "<|MASK|>", "special": false, "normalized": false}
  },
  "eos_token": "<|endoftext|>"
})");
    // Like SDAR's: an alias of an id already named is ignored; a new id is
    // added.
    write("added_tokens.json", R"({"<MASK>": 303, "<|MASK|>x": 304})");
  }
  ~TinyFolder() {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }

  void write(const std::string &name, const std::string &text) const {
    writeFile(dir / name, text);
  }
  std::string path(const std::string &name) const { return (dir / name).string(); }

  fs::path dir;
};

/// Loads a folder into `tok`; a fatal failure when it does not load.
void loadInto(const std::string &dir, std::optional<Tokenizer> &tok) {
  Result<Tokenizer> result = Tokenizer::load(dir);
  ASSERT_TRUE(result) << result.error().format();
  tok.emplace(*result);
}

/// Tests on the tiny folder.
class TinyTokenizer : public ::testing::Test {
protected:
  void SetUp() override { loadInto(folder.dir.string(), tok); }

  TinyFolder folder;
  std::optional<Tokenizer> tok;
};

Error expectLoadError(const TinyFolder &folder) {
  Result<Tokenizer> result = Tokenizer::load(folder.dir.string());
  EXPECT_FALSE(result) << "the folder loaded";
  return result ? Error() : result.error();
}

std::vector<int32_t> bytes(std::string_view text) {
  return std::vector<int32_t>(text.begin(), text.end());
}

//===----------------------------------------------------------------------===//
// Encoding and decoding, on the tiny folder
//===----------------------------------------------------------------------===//

TEST_F(TinyTokenizer, MergesByRank) {
  EXPECT_EQ(tok->encode("hello"), (std::vector<int32_t>{259}));
  EXPECT_EQ(tok->encode("hello world"), (std::vector<int32_t>{259, 264}));
  // "ello" has no "he": it stops at the ll merge.
  EXPECT_EQ(tok->encode("ello"), (std::vector<int32_t>{'e', 257, 'o'}));
  EXPECT_EQ(tok->decode({259, 264}), "hello world");
  EXPECT_EQ(tok->encode(""), std::vector<int32_t>{});
}

TEST_F(TinyTokenizer, LongPiecesMergeLikeShortOnes) {
  // Pieces over 64 bytes take the heap path; both must agree.
  std::string word;
  std::vector<int32_t> expected;
  for (int i = 0; i < 40; ++i) {
    word += "hello";
    expected.push_back(259);
  }
  EXPECT_EQ(tok->encode(word), expected);
  EXPECT_EQ(tok->decode(tok->encode(word)), word);
}

TEST_F(TinyTokenizer, SpecialTokensAreSingleIds) {
  EXPECT_EQ(tok->encode("a<|im_start|>b<|im_end|>"),
            (std::vector<int32_t>{'a', 300, 'b', 301}));
  EXPECT_EQ(tok->encode("<|MASK|><|MASK|>"), (std::vector<int32_t>{303, 303}));
  // The longest added token wins at a position.
  EXPECT_EQ(tok->encode("<|MASK|>x"), (std::vector<int32_t>{304}));
  // A partial token is plain text; the added_tokens.json alias is not a token.
  EXPECT_EQ(tok->encode("<|im_end"), bytes("<|im_end"));
  EXPECT_EQ(tok->encode("<MASK>"), bytes("<MASK>"));
  EXPECT_EQ(tok->tokenId("<|MASK|>"), 303);
  EXPECT_EQ(tok->tokenId("<MASK>"), -1);
  EXPECT_EQ(tok->tokenId("Ġworld"), 264);
  EXPECT_EQ(tok->tokenId("nope"), -1);
  EXPECT_EQ(tok->vocabSize(), 305);
  EXPECT_EQ(tok->decode({'a', 300, 'b', 302}), "a<|im_start|>b<|endoftext|>");
}

TEST_F(TinyTokenizer, InvalidUtf8FallsBackToBytes) {
  std::string text = "\xFF" "hello\xC3" " world\xE2\x82";
  std::vector<int32_t> ids = tok->encode(text);
  EXPECT_EQ(ids, (std::vector<int32_t>{0xFF, 259, 0xC3, 264, 0xE2, 0x82}));
  EXPECT_EQ(tok->decodeBytes(ids), text);
  // decode() repairs like transformers: one U+FFFD per maximal ill-formed
  // subpart ("\xE2\x82" is one).
  EXPECT_EQ(tok->decode(ids), "\uFFFDhello\uFFFD world\uFFFD");
  // A character cut in two by the ids is repaired the same way.
  std::vector<int32_t> euro = tok->encode("\u20AC");
  ASSERT_EQ(euro.size(), 3u);
  EXPECT_EQ(tok->decode({euro[0], euro[1]}), "\uFFFD");
  EXPECT_EQ(tok->decode(euro), "\u20AC");
}

TEST_F(TinyTokenizer, NormalisesToNfc) {
  EXPECT_EQ(tok->encode("e\u0301"), tok->encode("\u00E9"));
  EXPECT_EQ(tok->encode("\u2126"), tok->encode("\u03A9")); // Ohm sign -> Omega
  EXPECT_EQ(tok->decode(tok->encode("\u1100\u1161")), "\uAC00");
}

TEST_F(TinyTokenizer, UnknownIdsAreSkipped) {
  EXPECT_EQ(tok->decode({-1, 'a', 99999, 'b'}), "ab");
}

TEST_F(TinyTokenizer, ChatTemplate) {
  EXPECT_EQ(tok->applyChatTemplate("Write a kernel."),
            "<|im_start|>user\nWrite a kernel.<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(tok->applyChatTemplate("q", "a"),
            "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n"
            "<think>\n\n</think>\n\na<|im_end|>\n");
  EXPECT_EQ(tok->applyChatTemplate("q", "<think>\nplan\n</think>\n\ncode"),
            "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n"
            "<think>\nplan\n</think>\n\ncode<|im_end|>\n");
}

//===----------------------------------------------------------------------===//
// Load errors name the file, and the line or entry
//===----------------------------------------------------------------------===//

TEST(TokenizerLoad, MissingFile) {
  TinyFolder folder;
  fs::remove(folder.dir / "vocab.json");
  Error error = expectLoadError(folder);
  EXPECT_EQ(error.file, folder.path("vocab.json"));
  EXPECT_NE(error.message.find("cannot read"), std::string::npos) << error.message;
}

TEST(TokenizerLoad, CorruptVocabNamesFileAndLine) {
  TinyFolder folder;
  folder.write("vocab.json", "{\"a\": 0,\n\"b\": 1,\n\"c\" 2}");
  Error error = expectLoadError(folder);
  EXPECT_EQ(error.file, folder.path("vocab.json"));
  EXPECT_EQ(error.line, 3u);
  EXPECT_EQ(error.format().rfind(folder.path("vocab.json") + ":3: error: ", 0), 0u)
      << error.format();
}

TEST(TokenizerLoad, VocabEntryThatIsNotAnId) {
  TinyFolder folder;
  folder.write("vocab.json", R"({"a": 0, "b": "one"})");
  Error error = expectLoadError(folder);
  EXPECT_EQ(error.file, folder.path("vocab.json"));
  EXPECT_NE(error.message.find("\"b\""), std::string::npos) << error.message;
}

TEST(TokenizerLoad, VocabWithoutEveryByte) {
  TinyFolder folder;
  folder.write("merges.txt", "a b\n");
  folder.write("vocab.json", R"({"a": 0, "b": 1, "ab": 2})");
  Error error = expectLoadError(folder);
  EXPECT_EQ(error.file, folder.path("vocab.json"));
  EXPECT_NE(error.message.find("no token for byte 0x00"), std::string::npos)
      << error.message;
}

TEST(TokenizerLoad, MergeOfUnknownToken) {
  TinyFolder folder;
  folder.write("merges.txt", "#version: 0.2\nh e\nh zz\n");
  Error error = expectLoadError(folder);
  EXPECT_EQ(error.file, folder.path("merges.txt"));
  EXPECT_EQ(error.line, 3u);
  EXPECT_NE(error.message.find("\"zz\""), std::string::npos) << error.message;
}

TEST(TokenizerLoad, MergeWhoseResultIsUnknown) {
  TinyFolder folder;
  folder.write("merges.txt", "x y\n");
  Error error = expectLoadError(folder);
  EXPECT_EQ(error.line, 1u);
  EXPECT_NE(error.message.find("\"xy\""), std::string::npos) << error.message;
}

TEST(TokenizerLoad, MalformedMergeLine) {
  TinyFolder folder;
  folder.write("merges.txt", "h e\nhello\n");
  Error error = expectLoadError(folder);
  EXPECT_EQ(error.file, folder.path("merges.txt"));
  EXPECT_EQ(error.line, 2u);
}

TEST(TokenizerLoad, BadTokenizerConfig) {
  TinyFolder folder;
  folder.write("tokenizer_config.json", "{\"added_tokens_decoder\": [}");
  EXPECT_EQ(expectLoadError(folder).file, folder.path("tokenizer_config.json"));
  folder.write("tokenizer_config.json",
               R"({"added_tokens_decoder": {"7": {"content": "<x>", "rstrip": true}}})");
  Error error = expectLoadError(folder);
  EXPECT_NE(error.message.find("added_tokens_decoder[\"7\"]"), std::string::npos)
      << error.message;
  folder.write("tokenizer_config.json",
               R"({"added_tokens_decoder": {"seven": {"content": "<x>"}}})");
  EXPECT_EQ(expectLoadError(folder).file, folder.path("tokenizer_config.json"));
}

TEST(TokenizerLoad, OptionalFilesMayBeAbsent) {
  TinyFolder folder;
  fs::remove(folder.dir / "tokenizer_config.json");
  fs::remove(folder.dir / "added_tokens.json");
  std::optional<Tokenizer> tok;
  loadInto(folder.dir.string(), tok);
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->encode("<|im_end|>").size(), 10u); // plain text now
}

//===----------------------------------------------------------------------===//
// The folder under test: SDAR's when DICE_SDAR_DIR is set, else the tiny one
//===----------------------------------------------------------------------===//

class FolderUnderTest : public ::testing::Test {
protected:
  void SetUp() override {
    const char *sdar = std::getenv("DICE_SDAR_DIR");
    isSdar = sdar && *sdar;
    loadInto(isSdar ? std::string(sdar) : tiny.dir.string(), tok);
  }

  TinyFolder tiny;
  bool isSdar = false;
  std::optional<Tokenizer> tok;
};

TEST_F(FolderUnderTest, KnownIds) {
  if (isSdar) {
    EXPECT_EQ(tok->vocabSize(), 151670);
    EXPECT_EQ(tok->tokenId("<|endoftext|>"), 151643);
    EXPECT_EQ(tok->tokenId("<|im_end|>"), 151645);
    EXPECT_EQ(tok->tokenId("<|MASK|>"), 151669);
    EXPECT_EQ(tok->tokenId("<MASK>"), -1);
    EXPECT_EQ(tok->encode("hello world"), (std::vector<int32_t>{14990, 1879}));
  } else {
    EXPECT_EQ(tok->vocabSize(), 305);
    EXPECT_EQ(tok->encode("hello world"), (std::vector<int32_t>{259, 264}));
  }
  for (const char *special : {"<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|MASK|>"})
    EXPECT_EQ(tok->encode(special), std::vector<int32_t>{tok->tokenId(special)})
        << special;
}

TEST_F(FolderUnderTest, DecodeInvertsEncodeOnNfcText) {
  const char *texts[] = {
      "",
      "__global__ void k(float *x) {\n\tx[threadIdx.x] *= 2.0f;\r\n}\n",
      "I'M sure you'Ve SEEN it; they'll   say\n\n\nno.  ",
      "Straße façade Ελληνικά Русский 日本語 中文 한국어 العربية עברית हिन्दी ไทย",
      "e\u0301 is not NFC but \u00E9 is; \u2126 is not, \u03A9 is.",
      "👍🏽 👨‍👩‍👧‍👦 🇫🇷 1️⃣ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ∀x∈ℝ",
      "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<|MASK|><|MASK|>",
      "\u00A0\u3000\u2028\u0085 12345678901234567890 ١٢٣",
  };
  for (const char *text : texts) {
    std::string expected = text;
    // The two non-NFC spellings come back composed.
    for (auto [from, to] : {std::pair<std::string, std::string>{"e\u0301", "\u00E9"},
                            {"\u2126", "\u03A9"}})
      for (size_t at; (at = expected.find(from)) != std::string::npos;)
        expected.replace(at, from.size(), to);
    EXPECT_EQ(tok->decode(tok->encode(text)), expected) << text;
  }
}

TEST_F(FolderUnderTest, ChatPromptKeepsSpecialTokens) {
  std::string prompt = tok->applyChatTemplate("Fuse a GELU.");
  std::vector<int32_t> ids = tok->encode(prompt);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), tok->tokenId("<|im_start|>"));
  EXPECT_EQ(std::count(ids.begin(), ids.end(), tok->tokenId("<|im_end|>")), 1);
  EXPECT_EQ(tok->decode(ids), prompt);
}

TEST_F(FolderUnderTest, EncodesFromSeveralThreads) {
  std::string text;
  for (int i = 0; i < 200; ++i)
    text += "for (int i" + std::to_string(i) + " = 0; i < n; ++i) y[i] = x[i];\n";
  std::vector<int32_t> expected = tok->encode(text);
  std::vector<std::vector<int32_t>> results(4);
  std::vector<std::thread> threads;
  for (auto &result : results)
    threads.emplace_back([&] {
      for (int k = 0; k < 5; ++k)
        result = tok->encode(text);
    });
  for (std::thread &t : threads)
    t.join();
  for (const auto &result : results)
    EXPECT_EQ(result, expected);
}

} // namespace
