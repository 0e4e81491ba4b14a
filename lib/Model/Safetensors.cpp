//===- Safetensors.cpp - memory-mapped safetensors files ------------------===//
//
// Format: an 8-byte little-endian header length N, N bytes of JSON mapping
// each tensor name to {dtype, shape, data_offsets: [begin, end]} (offsets
// relative to the end of the header), optional "__metadata__", then data.
//
//===----------------------------------------------------------------------===//

#include "dice/Model/Safetensors.h"
#include "dice/Support/File.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace dice {
namespace {

using nlohmann::json;

Error fileError(const std::string &path, const std::string &what) {
  return Error(path, what);
}

Error tensorError(const std::string &path, const std::string &tensor,
                  const std::string &what) {
  return Error(path, 0, 0, "tensor '" + tensor + "'", what);
}

std::optional<ModelDType> dtypeFromCode(const std::string &code) {
  if (code == "F32")
    return ModelDType::Float32;
  if (code == "F16")
    return ModelDType::Float16;
  if (code == "BF16")
    return ModelDType::BFloat16;
  return std::nullopt;
}

const char *dtypeCode(ModelDType dtype) {
  switch (dtype) {
  case ModelDType::Float32:
    return "F32";
  case ModelDType::Float16:
    return "F16";
  case ModelDType::BFloat16:
    return "BF16";
  }
  return "?";
}

/// Checks one header entry against the data section of `dataBytes` bytes.
Result<TensorEntry> parseEntry(const std::string &path, const std::string &name,
                               const json &info, const std::byte *data,
                               size_t dataBytes) {
  if (!info.is_object())
    return tensorError(path, name, "header entry is not an object");
  auto dtypeIt = info.find("dtype");
  auto shapeIt = info.find("shape");
  auto offsetsIt = info.find("data_offsets");
  if (dtypeIt == info.end() || !dtypeIt->is_string())
    return tensorError(path, name, "header has no dtype");
  if (shapeIt == info.end() || !shapeIt->is_array())
    return tensorError(path, name, "header has no shape");
  if (offsetsIt == info.end() || !offsetsIt->is_array() ||
      offsetsIt->size() != 2 || !(*offsetsIt)[0].is_number_unsigned() ||
      !(*offsetsIt)[1].is_number_unsigned())
    return tensorError(path, name, "header has no valid data_offsets");

  TensorEntry entry;
  entry.name = name;
  std::optional<ModelDType> dtype = dtypeFromCode(dtypeIt->get<std::string>());
  if (!dtype)
    return tensorError(path, name,
                       "unsupported dtype " + dtypeIt->get<std::string>() +
                           " (expected F32, F16 or BF16)");
  entry.dtype = *dtype;

  uint64_t numel = 1;
  for (const json &dim : *shapeIt) {
    if (!dim.is_number_unsigned())
      return tensorError(path, name, "shape holds a non-integer");
    uint64_t size = dim.get<uint64_t>();
    if (size != 0 && numel > (uint64_t(1) << 62) / size)
      return tensorError(path, name, "shape is too large");
    numel *= size;
    entry.shape.push_back(int64_t(size));
  }

  uint64_t begin = (*offsetsIt)[0].get<uint64_t>();
  uint64_t end = (*offsetsIt)[1].get<uint64_t>();
  if (begin > end)
    return tensorError(path, name, "data_offsets are reversed");
  if (end > dataBytes)
    return tensorError(path, name,
                       "data ends at byte " + std::to_string(end) +
                           " of a data section of " + std::to_string(dataBytes) +
                           " bytes (truncated file?)");
  if (end - begin != numel * elementSize(entry.dtype))
    return tensorError(path, name,
                       "holds " + std::to_string(end - begin) +
                           " bytes, its shape and dtype need " +
                           std::to_string(numel * elementSize(entry.dtype)));
  entry.data = data + begin;
  entry.bytes = end - begin;
  return entry;
}

} // namespace

size_t elementSize(ModelDType dtype) {
  return dtype == ModelDType::Float32 ? 4 : 2;
}

Result<std::unique_ptr<SafetensorsFile>>
SafetensorsFile::open(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fileError(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return fileError(path, "cannot stat");
  }
  size_t size = size_t(st.st_size);
  if (size < 8) {
    ::close(fd);
    return fileError(path, "file of " + std::to_string(size) +
                               " bytes is too short for a safetensors header");
  }
  void *mapping = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd); // the mapping keeps the file alive
  if (mapping == MAP_FAILED)
    return fileError(path, std::string("cannot map: ") + std::strerror(errno));

  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->filePath = path;
  file->mapping = mapping;
  file->mappingSize = size;
  const auto *bytes = static_cast<const std::byte *>(mapping);

  uint64_t headerBytes = 0;
  for (int i = 7; i >= 0; --i)
    headerBytes = (headerBytes << 8) | uint64_t(bytes[i]);
  if (headerBytes > size - 8)
    return fileError(path, "header length " + std::to_string(headerBytes) +
                               " exceeds the file size " +
                               std::to_string(size) +
                               " (truncated file or corrupt header)");

  json header;
  try {
    header = json::parse(reinterpret_cast<const char *>(bytes + 8),
                         reinterpret_cast<const char *>(bytes + 8 + headerBytes));
  } catch (const json::parse_error &e) {
    return fileError(path, "corrupt header: invalid JSON at byte " +
                               std::to_string(e.byte));
  } catch (const json::exception &e) { // e.g. a number out of range
    return fileError(path, "corrupt header: " + std::string(e.what()));
  }
  if (!header.is_object())
    return fileError(path, "corrupt header: not a JSON object");

  const std::byte *data = bytes + 8 + headerBytes;
  size_t dataBytes = size - 8 - headerBytes;
  for (const auto &[name, info] : header.items()) {
    if (name == "__metadata__")
      continue;
    Result<TensorEntry> entry = parseEntry(path, name, info, data, dataBytes);
    if (!entry)
      return entry.error();
    file->entries.push_back(std::move(*entry));
  }
  return file;
}

SafetensorsFile::~SafetensorsFile() {
  if (mapping)
    ::munmap(mapping, mappingSize);
}

Result<SafetensorsCheckpoint>
SafetensorsCheckpoint::open(const std::string &dir) {
  SafetensorsCheckpoint checkpoint;
  std::string indexPath = dir + "/model.safetensors.index.json";

  // Which files to open, and for a sharded checkpoint which tensor the index
  // puts in which file.
  std::vector<std::string> shardNames;
  std::map<std::string, std::string> indexMap;
  std::error_code ec;
  if (std::filesystem::exists(indexPath, ec)) {
    checkpoint.source = indexPath;
    Result<std::string> text = readFile(indexPath);
    if (!text)
      return text.error();
    json index;
    try {
      index = json::parse(*text);
    } catch (const json::parse_error &e) {
      return fileError(indexPath,
                       "invalid JSON at byte " + std::to_string(e.byte));
    } catch (const json::exception &e) { // e.g. a number out of range
      return fileError(indexPath, "invalid JSON: " + std::string(e.what()));
    }
    auto weightMap = index.is_object() ? index.find("weight_map") : index.end();
    if (!index.is_object() || weightMap == index.end() ||
        !weightMap->is_object())
      return fileError(indexPath, "has no weight_map object");
    std::set<std::string> seen;
    for (const auto &[name, file] : weightMap->items()) {
      if (!file.is_string() || file.get<std::string>().find('/') != std::string::npos)
        return tensorError(indexPath, name, "weight_map entry is not a file name");
      indexMap[name] = file.get<std::string>();
      if (seen.insert(file.get<std::string>()).second)
        shardNames.push_back(file.get<std::string>());
    }
  } else {
    checkpoint.source = dir + "/model.safetensors";
    shardNames.push_back("model.safetensors");
  }

  for (const std::string &shard : shardNames) {
    Result<std::unique_ptr<SafetensorsFile>> file =
        SafetensorsFile::open(dir + "/" + shard);
    if (!file)
      return file.error();
    const SafetensorsFile *opened = file->get();
    checkpoint.files.push_back(std::move(*file));
    for (const TensorEntry &entry : opened->tensors()) {
      if (!indexMap.empty()) {
        auto listed = indexMap.find(entry.name);
        if (listed == indexMap.end())
          return tensorError(opened->path(), entry.name,
                             "not listed in " + indexPath);
        if (listed->second != shard)
          return tensorError(opened->path(), entry.name,
                             indexPath + " places it in " + listed->second);
      }
      if (!checkpoint.byName.emplace(entry.name, Located{&entry, opened}).second)
        return tensorError(opened->path(), entry.name,
                           "appears in more than one shard");
    }
  }
  for (const auto &[name, shard] : indexMap)
    if (!checkpoint.byName.count(name))
      return tensorError(dir + "/" + shard, name,
                         "listed in " + indexPath + " but absent from the file");
  return checkpoint;
}

Status writeSafetensors(const std::string &path,
                        const std::vector<TensorToWrite> &tensors) {
  json header = json::object();
  uint64_t offset = 0;
  for (const TensorToWrite &t : tensors) {
    header[t.name] = {{"dtype", dtypeCode(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes}}};
    offset += t.bytes;
  }
  // Replace, not throw, on names that are not UTF-8.
  std::string text = header.dump(-1, ' ', false, json::error_handler_t::replace);
  // Pad with spaces so the data section starts 8-byte aligned, as the
  // reference writer does.
  text.append((8 - text.size() % 8) % 8, ' ');

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return fileError(path, "cannot open for writing");
  uint64_t headerBytes = text.size();
  char lengthBytes[8];
  for (int i = 0; i < 8; ++i)
    lengthBytes[i] = char((headerBytes >> (8 * i)) & 0xff);
  out.write(lengthBytes, 8);
  out.write(text.data(), std::streamsize(text.size()));
  for (const TensorToWrite &t : tensors)
    out.write(static_cast<const char *>(t.data), std::streamsize(t.bytes));
  if (!out.flush())
    return fileError(path, "write failed");
  return {};
}

} // namespace dice
