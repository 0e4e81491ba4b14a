//===- Manifest.cpp - the manifest dice-lower writes ---------------------===//

#include "dice/Runtime/Manifest.h"

#include "dice/Support/File.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace dice {
namespace {

using nlohmann::json;

/// Line and column (1-based) of byte `offset` of `text`.
void locate(std::string_view text, size_t offset, Error &error) {
  offset = std::min(offset, text.size());
  error.line = 1 + std::count(text.begin(), text.begin() + offset, '\n');
  size_t lineStart = text.rfind('\n', offset ? offset - 1 : 0);
  error.column = lineStart == std::string_view::npos || offset == 0
                     ? offset + 1
                     : offset - lineStart;
}

Error fieldError(const std::string &path, const std::string &key,
                 std::string message) {
  Error error(path, std::move(message));
  error.key = key;
  return error;
}

Result<std::vector<ManifestTensor>>
parseTensors(const json &entry, const char *field, const std::string &path,
             const std::string &where) {
  std::string key = where + "." + field;
  auto it = entry.find(field);
  if (it == entry.end() || !it->is_array())
    return fieldError(path, key, "must be an array of tensors");
  std::vector<ManifestTensor> tensors;
  for (size_t i = 0; i < it->size(); ++i) {
    const json &tensor = (*it)[i];
    std::string at = key + "[" + std::to_string(i) + "]";
    if (!tensor.is_object())
      return fieldError(path, at, "must be an object with 'shape' and 'dtype'");
    auto shape = tensor.find("shape");
    if (shape == tensor.end() || !shape->is_array())
      return fieldError(path, at + ".shape", "must be an array of sizes");
    ManifestTensor sig;
    for (const json &size : *shape) {
      if (!size.is_number_integer() || size.get<int64_t>() < -1)
        return fieldError(path, at + ".shape",
                          "sizes must be integers, -1 for a dynamic size");
      sig.shape.push_back(size.get<int64_t>());
    }
    auto dtype = tensor.find("dtype");
    std::optional<DType> parsed =
        dtype != tensor.end() && dtype->is_string()
            ? parseDType(dtype->get<std::string>())
            : std::nullopt;
    if (!parsed)
      return fieldError(path, at + ".dtype",
                        "must name a dtype (float32, float16, bfloat16, "
                        "float64, int64, int32, int16, int8, uint8, bool)");
    sig.dtype = *parsed;
    tensors.push_back(std::move(sig));
  }
  return tensors;
}

Result<ManifestKernel> parseKernel(const std::string &fingerprint,
                                   const json &entry,
                                   const std::string &path) {
  std::string where = "kernels." + fingerprint;
  if (!entry.is_object())
    return fieldError(path, where, "must be an object");
  ManifestKernel kernel;
  auto text = [&](const char *field, bool required,
                  std::string &out) -> Status {
    auto it = entry.find(field);
    if (it == entry.end() || it->is_null()) {
      if (required)
        return fieldError(path, where + "." + field, "is missing");
      return {};
    }
    if (!it->is_string())
      return fieldError(path, where + "." + field, "must be a string");
    out = it->get<std::string>();
    return {};
  };
  if (Status s = text("operator", true, kernel.operatorName); !s)
    return s.error();
  if (Status s = text("library", false, kernel.library); !s)
    return s.error();
  if (Status s = text("symbol", false, kernel.symbol); !s)
    return s.error();
  Result<std::vector<ManifestTensor>> inputs =
      parseTensors(entry, "inputs", path, where);
  if (!inputs)
    return inputs.error();
  Result<std::vector<ManifestTensor>> results =
      parseTensors(entry, "results", path, where);
  if (!results)
    return results.error();
  kernel.inputs = inputs.take();
  kernel.results = results.take();
  if (auto verdict = entry.find("verdict"); verdict != entry.end()) {
    if (!verdict->is_object())
      return fieldError(path, where + ".verdict", "must be an object");
    kernel.verdictJson = verdict->dump();
  }
  return kernel;
}

json tensorsJson(const std::vector<ManifestTensor> &tensors) {
  json out = json::array();
  for (const ManifestTensor &t : tensors)
    out.push_back({{"shape", t.shape}, {"dtype", dtypeName(t.dtype)}});
  return out;
}

} // namespace

Result<Manifest> parseManifest(std::string_view text, const std::string &path) {
  json document;
  try {
    document = json::parse(text);
  } catch (const json::parse_error &e) {
    Error error(path, "malformed manifest: " + std::string(e.what()));
    // nlohmann's byte is one past the offending character.
    locate(text, e.byte ? e.byte - 1 : 0, error);
    return error;
  } catch (const json::exception &e) {
    // Not a syntax error but a value nlohmann cannot hold (a number out of
    // double's range): no byte to point at.
    return Error(path, "malformed manifest: " + std::string(e.what()));
  }
  if (!document.is_object() || !document.contains("version") ||
      document["version"] != kManifestVersion)
    return Error(path, "not a version " + std::to_string(kManifestVersion) +
                           " DICE manifest");
  auto kernels = document.find("kernels");
  if (kernels == document.end() || !kernels->is_object())
    return Error(path, "the manifest has no 'kernels' object");
  Manifest manifest;
  for (const auto &[fingerprint, entry] : kernels->items()) {
    Result<ManifestKernel> kernel = parseKernel(fingerprint, entry, path);
    if (!kernel)
      return kernel.error();
    manifest.kernels.emplace(fingerprint, kernel.take());
  }
  return manifest;
}

Result<Manifest> readManifest(const std::string &path) {
  Result<std::string> text = readFile(path);
  if (!text)
    return text.error();
  return parseManifest(*text, path);
}

Result<std::string> printManifest(const Manifest &manifest) {
  json kernels = json::object();
  for (const auto &[fingerprint, kernel] : manifest.kernels) {
    json entry = json::object();
    if (!kernel.library.empty())
      entry["library"] = kernel.library;
    entry["operator"] = kernel.operatorName;
    if (!kernel.symbol.empty())
      entry["symbol"] = kernel.symbol;
    entry["inputs"] = tensorsJson(kernel.inputs);
    entry["results"] = tensorsJson(kernel.results);
    if (!kernel.verdictJson.empty()) {
      json verdict = json::parse(kernel.verdictJson, nullptr, false);
      if (verdict.is_discarded() || !verdict.is_object())
        return fieldError("", "kernels." + fingerprint + ".verdict",
                          "is not a JSON object");
      entry["verdict"] = std::move(verdict);
    }
    kernels[fingerprint] = std::move(entry);
  }
  json document = {{"version", kManifestVersion}, {"kernels", kernels}};
  return document.dump(2) + "\n";
}

std::string libraryPath(const std::string &manifestPath,
                        const ManifestKernel &kernel) {
  if (!kernel.library.empty() && kernel.library[0] == '/')
    return kernel.library;
  size_t slash = manifestPath.rfind('/');
  return slash == std::string::npos
             ? kernel.library
             : manifestPath.substr(0, slash + 1) + kernel.library;
}

} // namespace dice
