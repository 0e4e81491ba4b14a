//===- Safetensors.h - memory-mapped safetensors files ----------*- C++ -*-===//
//
// Reads safetensors checkpoints (one file, or shards listed by
// `model.safetensors.index.json`) by mapping them into memory: tensors are
// views of the mapping until the loader copies each once to its device and
// dtype. Every header is checked against the file before any byte is used,
// so a truncated file or a corrupt header is an error naming the file and
// the tensor, never a read past the end. Plain C++: no LibTorch, no LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_MODEL_SAFETENSORS_H
#define DICE_MODEL_SAFETENSORS_H

#include "dice/Model/ModelConfig.h"
#include "dice/Support/Result.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dice {

/// One tensor of a mapped file: its bytes stay valid while the file lives.
struct TensorEntry {
  std::string name;
  ModelDType dtype = ModelDType::Float32;
  std::vector<int64_t> shape;
  const std::byte *data = nullptr;
  size_t bytes = 0;
};

/// A mapped, validated safetensors file.
class SafetensorsFile {
public:
  static Result<std::unique_ptr<SafetensorsFile>> open(const std::string &path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile &) = delete;
  SafetensorsFile &operator=(const SafetensorsFile &) = delete;

  const std::string &path() const { return filePath; }
  const std::vector<TensorEntry> &tensors() const { return entries; }

private:
  SafetensorsFile() = default;

  std::string filePath;
  void *mapping = nullptr;
  size_t mappingSize = 0;
  std::vector<TensorEntry> entries;
};

/// Every tensor of a checkpoint directory and the file that holds it.
class SafetensorsCheckpoint {
public:
  struct Located {
    const TensorEntry *entry;
    const SafetensorsFile *file;
  };

  /// Opens `dir/model.safetensors.index.json` and its shards when the index
  /// exists, else `dir/model.safetensors`.
  static Result<SafetensorsCheckpoint> open(const std::string &dir);

  const std::map<std::string, Located> &tensors() const { return byName; }
  /// What errors about the checkpoint as a whole name: the index or the file.
  const std::string &description() const { return source; }

private:
  std::vector<std::unique_ptr<SafetensorsFile>> files;
  std::map<std::string, Located> byName;
  std::string source;
};

/// A tensor to write: `data` holds `bytes` in the dtype's little-endian layout.
struct TensorToWrite {
  std::string name;
  ModelDType dtype = ModelDType::Float32;
  std::vector<int64_t> shape;
  const void *data = nullptr;
  size_t bytes = 0;
};

/// Writes a safetensors file (used by tools for their outputs).
Status writeSafetensors(const std::string &path,
                        const std::vector<TensorToWrite> &tensors);

/// Bytes per element of `dtype`.
size_t elementSize(ModelDType dtype);

} // namespace dice

#endif // DICE_MODEL_SAFETENSORS_H
