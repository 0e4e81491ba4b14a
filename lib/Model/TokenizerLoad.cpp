//===- TokenizerLoad.cpp - reading a Hugging Face tokenizer folder --------===//
//
// vocab.json (byte-level spelling -> id) and merges.txt (one merge per line,
// in rank order) are required; tokenizer_config.json (added_tokens_decoder)
// and added_tokens.json add the tokens matched verbatim. Every problem is
// reported with its file, and its line or entry where it has one.
//
//===----------------------------------------------------------------------===//

#include "TokenizerImpl.h"

#include "dice/Support/File.h"
#include "dice/Support/JsonSyntaxError.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

namespace dice {
namespace {

using json = nlohmann::json;

/// Ids above this are refused: tables are sized by the largest id.
constexpr int64_t kMaxTokenId = (1 << 24) - 1;

unsigned lineAt(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<unsigned>(
                 std::count(text.begin(), text.begin() + offset, '\n'));
}

/// Streams vocab.json into the id map without building a document: the
/// file has 150k entries.
class VocabReader : public JsonSyntaxError {
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

Status readVocab(const std::string &path, Tokenizer::Impl &impl) {
  Result<std::string> read = readFile(path);
  if (!read)
    return read.error();
  const std::string &text = *read;
  VocabReader reader(impl.vocab);
  if (json::sax_parse(text, &reader))
    return {};
  if (!reader.semanticError.empty())
    return Error(path, reader.semanticError);
  return Error(path, lineAt(text, reader.offset), 0, "", reader.message);
}

/// Parses a small JSON file into a document.
Result<json> readJson(const std::string &path) {
  Result<std::string> read = readFile(path);
  if (!read)
    return read.error();
  const std::string &text = *read;
  json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!document.is_discarded())
    return document;
  JsonSyntaxError capture;
  json::sax_parse(text, &capture);
  return Error(path, lineAt(text, capture.offset), 0, "", capture.message);
}

/// An optional file's JSON object: nullopt when the file is absent, an
/// error naming `shape` when it holds something other than an object.
Result<std::optional<json>> readOptionalObject(const std::string &path,
                                               const char *shape) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return std::optional<json>();
  Result<json> read = readJson(path);
  if (!read)
    return read.error();
  if (!read->is_object())
    return Error(path, std::string("the file is not ") + shape);
  return std::optional<json>(read.take());
}

Status readMerges(const std::string &path, Tokenizer::Impl &impl,
                  MergeTable &merges) {
  Result<std::string> read = readFile(path);
  if (!read)
    return read.error();
  const std::string &text = *read;
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
      return Error(path, lineNo, 0, "",
                   "expected two tokens separated by one space, got \"" +
                       std::string(line) + "\"");
    std::string_view left = line.substr(0, space), right = line.substr(space + 1);
    auto leftIt = impl.vocab.find(left), rightIt = impl.vocab.find(right);
    for (auto [it, token] : {std::pair{leftIt, left}, std::pair{rightIt, right}})
      if (it == impl.vocab.end())
        return Error(path, lineNo, 0, "",
                     "token \"" + std::string(token) +
                         "\" is not in vocab.json");
    std::string joined = std::string(left) + std::string(right);
    auto mergedIt = impl.vocab.find(joined);
    if (mergedIt == impl.vocab.end())
      return Error(path, lineNo, 0, "",
                   "merged token \"" + joined + "\" is not in vocab.json");
    merges.insert(leftIt->second, rightIt->second, {rank++, mergedIt->second});
  }
  return {};
}

Status addToken(Tokenizer::Impl &impl, const std::string &path,
                std::string content, int32_t id) {
  if (content.empty())
    return Error(path,
                 "added token " + std::to_string(id) + " has empty content");
  impl.addedIds[content] = id;
  impl.addedTokens.push_back({std::move(content), id});
  return {};
}

Status readTokenizerConfig(const std::string &path, Tokenizer::Impl &impl) {
  Result<std::optional<json>> read = readOptionalObject(path, "a JSON object");
  if (!read)
    return read.error();
  if (!*read)
    return {};
  const json &config = **read;
  auto decoder = config.find("added_tokens_decoder");
  if (decoder == config.end())
    return {};
  if (!decoder->is_object())
    return Error(path, "added_tokens_decoder is not an object");
  for (auto &[key, entry] : decoder->items()) {
    std::string where = "added_tokens_decoder[\"" + key + "\"]: ";
    int32_t id = -1;
    auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (ec != std::errc() || end != key.data() + key.size() || id < 0 ||
        id > kMaxTokenId)
      return Error(path, where + "the key is not a token id");
    auto content = entry.find("content");
    if (!entry.is_object() || content == entry.end() || !content->is_string())
      return Error(path, where + "no \"content\" string");
    // These change how the token matches (absorbing nearby spaces, whole
    // words only); no Qwen tokenizer sets them and they are not supported.
    for (const char *flag : {"lstrip", "rstrip", "single_word"})
      if (auto it = entry.find(flag); it != entry.end() && *it == true)
        return Error(path, where + "\"" + flag + "\": true is not supported");
    if (Status added = addToken(impl, path, content->get<std::string>(), id);
        !added)
      return added;
  }
  return {};
}

/// added_tokens.json repeats the added tokens, sometimes spelled otherwise
/// (SDAR's says "<MASK>" where tokenizer_config.json says "<|MASK|>").
/// As in transformers, an id already given by tokenizer_config.json keeps
/// its spelling there; only new ids are added.
Status readAddedTokens(const std::string &path, Tokenizer::Impl &impl) {
  Result<std::optional<json>> read =
      readOptionalObject(path, "a JSON object of token -> id");
  if (!read)
    return read.error();
  if (!*read)
    return {};
  const json &added = **read;
  std::vector<bool> taken;
  for (const AddedToken &token : impl.addedTokens) {
    if (taken.size() <= static_cast<size_t>(token.id))
      taken.resize(token.id + 1);
    taken[token.id] = true;
  }
  for (auto &[content, id] : added.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
        id.get<int64_t>() > kMaxTokenId)
      return Error(path,
                   "entry \"" + content + "\": the id is not a valid token id");
    int32_t value = id.get<int32_t>();
    bool idTaken = static_cast<size_t>(value) < taken.size() && taken[value];
    if (idTaken || impl.addedIds.count(content))
      continue;
    if (Status added = addToken(impl, path, content, value); !added)
      return added;
  }
  return {};
}

/// The byte of each id: what decoding emits and what encoding starts from.
Status buildTables(const std::string &vocabPath, Tokenizer::Impl &impl,
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
      return Error(vocabPath, "no token for byte " + std::string(hex) + " (\"" +
                                  spelling +
                                  "\"): a byte-level vocabulary has all 256");
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
  return {};
}

} // namespace

Result<Tokenizer> Tokenizer::load(const std::string &dir) {
  auto impl = std::make_shared<Impl>();
  auto file = [&](const char *name) { return dir + "/" + name; };
  Result<std::unique_ptr<PreTokenizer>> preTokenizer = PreTokenizer::create();
  if (!preTokenizer)
    return preTokenizer.error();
  impl->preTokenizer = preTokenizer.take();
  Status status = readVocab(file("vocab.json"), *impl);
  MergeTable merges;
  if (status)
    status = readMerges(file("merges.txt"), *impl, merges);
  if (status)
    status = readTokenizerConfig(file("tokenizer_config.json"), *impl);
  if (status)
    status = readAddedTokens(file("added_tokens.json"), *impl);
  if (status)
    status = buildTables(file("vocab.json"), *impl, std::move(merges));
  if (!status)
    return status.error();
  return Tokenizer(std::move(impl));
}

} // namespace dice
