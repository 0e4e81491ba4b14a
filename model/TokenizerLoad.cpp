//===- TokenizerLoad.cpp - reading a Hugging Face tokenizer folder --------===//
//
// vocab.json (byte-level spelling -> id) and merges.txt (one merge per line,
// in rank order) are required; tokenizer_config.json (added_tokens_decoder)
// and added_tokens.json add the tokens matched verbatim. Every problem is
// reported with its file, and its line or entry where it has one.
//
//===----------------------------------------------------------------------===//

#include "TokenizerImpl.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

namespace dice {
namespace {

using json = nlohmann::json;

/// Ids above this are refused: tables are sized by the largest id.
constexpr int64_t kMaxTokenId = (1 << 24) - 1;

/// Reads a whole file; `missing` tells an absent file from an unreadable one.
std::optional<TokenizerError> readFile(const std::string &path,
                                       std::string &text, bool &missing) {
  std::ifstream in(path, std::ios::binary);
  missing = false;
  if (!in) {
    missing = errno == ENOENT;
    return TokenizerError{path, 0,
                          std::string("cannot read file: ") + std::strerror(errno)};
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  text = buffer.str();
  return std::nullopt;
}

unsigned lineAt(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<unsigned>(
                 std::count(text.begin(), text.begin() + offset, '\n'));
}

/// A SAX handler that accepts any JSON and records the first syntax error.
class SyntaxErrorCapture : public nlohmann::json_sax<json> {
public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t &) override { return true; }
  bool string(string_t &) override { return true; }
  bool binary(binary_t &) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t &) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string &,
                   const nlohmann::detail::exception &error) override {
    syntaxError = error.what();
    // "[json.exception.parse_error.101] parse error at line 1, ..."
    if (size_t close = syntaxError.find("] "); close != std::string::npos)
      syntaxError.erase(0, close + 2);
    errorOffset = position;
    return false;
  }

  std::string syntaxError;
  size_t errorOffset = 0;
};

/// Streams vocab.json into the id map without building a document: the
/// file has 150k entries.
class VocabReader : public SyntaxErrorCapture {
public:
  explicit VocabReader(Tokenizer::Impl::IdMap &vocab) : vocab(vocab) {}

  bool start_object(std::size_t) override {
    if (depth++ == 0)
      return true;
    return fail("the value of \"" + currentKey + "\" is not an integer id");
  }
  bool end_object() override { --depth; return true; }
  bool key(string_t &k) override { currentKey = k; return true; }
  bool number_unsigned(number_unsigned_t id) override {
    if (depth != 1)
      return fail("the file is not a JSON object of token -> id");
    if (id > static_cast<number_unsigned_t>(kMaxTokenId))
      return fail("entry \"" + currentKey + "\": id " + std::to_string(id) +
                  " is out of range");
    vocab[currentKey] = static_cast<int32_t>(id);
    return true;
  }
  bool number_integer(number_integer_t id) override {
    if (id < 0)
      return fail("entry \"" + currentKey + "\": negative id " +
                  std::to_string(id));
    return number_unsigned(static_cast<number_unsigned_t>(id));
  }
  bool null() override { return notAnId(); }
  bool boolean(bool) override { return notAnId(); }
  bool number_float(number_float_t, const string_t &) override { return notAnId(); }
  bool string(string_t &) override { return notAnId(); }
  bool binary(binary_t &) override { return notAnId(); }
  bool start_array(std::size_t) override { return notAnId(); }

  std::string semanticError;

private:
  bool notAnId() {
    if (depth == 0)
      return fail("the file is not a JSON object of token -> id");
    return fail("the value of \"" + currentKey + "\" is not an integer id");
  }
  bool fail(std::string message) {
    semanticError = std::move(message);
    return false;
  }

  Tokenizer::Impl::IdMap &vocab;
  std::string currentKey;
  int depth = 0;
};

std::optional<TokenizerError> readVocab(const std::string &path,
                                        Tokenizer::Impl &impl) {
  std::string text;
  bool missing;
  if (auto error = readFile(path, text, missing))
    return error;
  VocabReader reader(impl.vocab);
  if (json::sax_parse(text, &reader))
    return std::nullopt;
  if (!reader.semanticError.empty())
    return TokenizerError{path, 0, reader.semanticError};
  return TokenizerError{path, lineAt(text, reader.errorOffset),
                        reader.syntaxError};
}

/// Parses a small JSON file into a document; `missing` tells an absent file
/// (allowed for the optional ones) from a broken one.
std::optional<TokenizerError> readJson(const std::string &path, json &document,
                                       bool &missing) {
  std::string text;
  if (auto error = readFile(path, text, missing))
    return error;
  document = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!document.is_discarded())
    return std::nullopt;
  SyntaxErrorCapture capture;
  json::sax_parse(text, &capture);
  return TokenizerError{path, lineAt(text, capture.errorOffset),
                        capture.syntaxError};
}

std::optional<TokenizerError> readMerges(const std::string &path,
                                         Tokenizer::Impl &impl,
                                         MergeTable &merges) {
  std::string text;
  bool missing;
  if (auto error = readFile(path, text, missing))
    return error;
  merges.reserve(impl.vocab.size());
  std::string_view rest = text;
  int32_t rank = 0;
  for (unsigned lineNo = 1; !rest.empty(); ++lineNo) {
    size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    if (line.empty() || line.substr(0, 8) == "#version")
      continue;
    size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0 ||
        space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string_view::npos)
      return TokenizerError{path, lineNo,
                            "expected two tokens separated by one space, got \"" +
                                std::string(line) + "\""};
    std::string_view left = line.substr(0, space), right = line.substr(space + 1);
    auto leftIt = impl.vocab.find(left), rightIt = impl.vocab.find(right);
    for (auto [it, token] : {std::pair{leftIt, left}, std::pair{rightIt, right}})
      if (it == impl.vocab.end())
        return TokenizerError{path, lineNo,
                              "token \"" + std::string(token) +
                                  "\" is not in vocab.json"};
    std::string joined = std::string(left) + std::string(right);
    auto mergedIt = impl.vocab.find(joined);
    if (mergedIt == impl.vocab.end())
      return TokenizerError{path, lineNo,
                            "merged token \"" + joined + "\" is not in vocab.json"};
    merges.insert(leftIt->second, rightIt->second, {rank++, mergedIt->second});
  }
  return std::nullopt;
}

std::optional<TokenizerError> addToken(Tokenizer::Impl &impl,
                                       const std::string &path,
                                       std::string content, int32_t id) {
  if (content.empty())
    return TokenizerError{path, 0, "added token " + std::to_string(id) +
                                       " has empty content"};
  impl.addedIds[content] = id;
  impl.addedTokens.push_back({std::move(content), id});
  return std::nullopt;
}

std::optional<TokenizerError> readTokenizerConfig(const std::string &path,
                                                  Tokenizer::Impl &impl) {
  json config;
  bool missing;
  if (auto error = readJson(path, config, missing))
    return missing ? std::nullopt : error;
  if (!config.is_object())
    return TokenizerError{path, 0, "the file is not a JSON object"};
  auto decoder = config.find("added_tokens_decoder");
  if (decoder == config.end())
    return std::nullopt;
  if (!decoder->is_object())
    return TokenizerError{path, 0, "added_tokens_decoder is not an object"};
  for (auto &[key, entry] : decoder->items()) {
    std::string where = "added_tokens_decoder[\"" + key + "\"]: ";
    int32_t id = -1;
    auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (ec != std::errc() || end != key.data() + key.size() || id < 0 ||
        id > kMaxTokenId)
      return TokenizerError{path, 0, where + "the key is not a token id"};
    auto content = entry.find("content");
    if (!entry.is_object() || content == entry.end() || !content->is_string())
      return TokenizerError{path, 0, where + "no \"content\" string"};
    // These change how the token matches (absorbing nearby spaces, whole
    // words only); no Qwen tokenizer sets them and they are not supported.
    for (const char *flag : {"lstrip", "rstrip", "single_word"})
      if (auto it = entry.find(flag); it != entry.end() && *it == true)
        return TokenizerError{path, 0, where + "\"" + flag +
                                           "\": true is not supported"};
    if (auto error = addToken(impl, path, content->get<std::string>(), id))
      return error;
  }
  return std::nullopt;
}

/// added_tokens.json repeats the added tokens, sometimes spelled otherwise
/// (SDAR's says "<MASK>" where tokenizer_config.json says "<|MASK|>").
/// As in transformers, an id already given by tokenizer_config.json keeps
/// its spelling there; only new ids are added.
std::optional<TokenizerError> readAddedTokens(const std::string &path,
                                              Tokenizer::Impl &impl) {
  json added;
  bool missing;
  if (auto error = readJson(path, added, missing))
    return missing ? std::nullopt : error;
  if (!added.is_object())
    return TokenizerError{path, 0, "the file is not a JSON object of token -> id"};
  std::vector<bool> taken;
  for (const AddedToken &token : impl.addedTokens) {
    if (taken.size() <= static_cast<size_t>(token.id))
      taken.resize(token.id + 1);
    taken[token.id] = true;
  }
  for (auto &[content, id] : added.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
        id.get<int64_t>() > kMaxTokenId)
      return TokenizerError{path, 0, "entry \"" + content +
                                         "\": the id is not a valid token id"};
    int32_t value = id.get<int32_t>();
    bool idTaken = static_cast<size_t>(value) < taken.size() && taken[value];
    if (idTaken || impl.addedIds.count(content))
      continue;
    if (auto error = addToken(impl, path, content, value))
      return error;
  }
  return std::nullopt;
}

/// The byte of each id: what decoding emits and what encoding starts from.
std::optional<TokenizerError> buildTables(const std::string &vocabPath,
                                          Tokenizer::Impl &impl,
                                          MergeTable merges) {
  int32_t maxId = -1;
  for (const auto &[spelling, id] : impl.vocab)
    maxId = std::max(maxId, id);
  for (const AddedToken &token : impl.addedTokens)
    maxId = std::max(maxId, token.id);
  impl.bytesOf.assign(maxId + 1, std::string());
  impl.known.assign(maxId + 1, false);
  // The reference decoder maps a token through the byte-level alphabet when
  // every character of it is in the alphabet, and takes it as UTF-8
  // otherwise; added tokens go through the same rule.
  auto setBytes = [&](const std::string &spelling, int32_t id) {
    std::string &bytes = impl.bytesOf[id];
    if (!fromByteLevel(spelling, bytes))
      bytes = spelling;
    impl.known[id] = true;
  };
  for (const auto &[spelling, id] : impl.vocab)
    setBytes(spelling, id);
  for (const AddedToken &token : impl.addedTokens)
    setBytes(token.content, token.id);

  std::array<int32_t, 256> byteIds;
  for (unsigned b = 0; b < 256; ++b) {
    std::string spelling = toByteLevel(std::string(1, static_cast<char>(b)));
    auto it = impl.vocab.find(spelling);
    if (it == impl.vocab.end()) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02X", b);
      return TokenizerError{vocabPath, 0,
                            "no token for byte " + std::string(hex) + " (\"" +
                                spelling +
                                "\"): a byte-level vocabulary has all 256"};
    }
    byteIds[b] = it->second;
  }
  impl.bpe.setTables(byteIds, std::move(merges));

  for (uint32_t i = 0; i < impl.addedTokens.size(); ++i)
    impl.addedByFirstByte[static_cast<unsigned char>(
                              impl.addedTokens[i].content[0])]
        .push_back(i);
  for (auto &indices : impl.addedByFirstByte)
    std::stable_sort(indices.begin(), indices.end(), [&](uint32_t a, uint32_t b) {
      return impl.addedTokens[a].content.size() > impl.addedTokens[b].content.size();
    });
  return std::nullopt;
}

} // namespace

TokenizerOrError Tokenizer::load(const std::string &dir) {
  auto impl = std::make_shared<Impl>();
  auto file = [&](const char *name) { return dir + "/" + name; };
  std::string regexError;
  impl->preTokenizer = PreTokenizer::create(regexError);
  if (!impl->preTokenizer)
    return TokenizerError{"<pre-tokenizer>", 0, regexError};
  if (auto error = readVocab(file("vocab.json"), *impl))
    return *error;
  MergeTable merges;
  if (auto error = readMerges(file("merges.txt"), *impl, merges))
    return *error;
  if (auto error = readTokenizerConfig(file("tokenizer_config.json"), *impl))
    return *error;
  if (auto error = readAddedTokens(file("added_tokens.json"), *impl))
    return *error;
  if (auto error = buildTables(file("vocab.json"), *impl, std::move(merges)))
    return *error;
  return Tokenizer(std::move(impl));
}

} // namespace dice
