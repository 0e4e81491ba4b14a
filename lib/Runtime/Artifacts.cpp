//===- Artifacts.cpp - what dice-lower leaves on disk --------------===//

#include "dice/Runtime/Artifacts.h"
#include "dice/Support/File.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace dice {
namespace {

/// The codes of DiceDType in include/dice/Runtime/DiceRuntime.h, which the
/// trampolines embed; DType numbers dtypes the same way (checked by a
/// static_assert beside DType's definition).
int dtypeCode(DType dtype) { return static_cast<int>(dtype); }

/// Byte width of one element, for the trampoline's offset arithmetic.
int elementBytes(DType dtype) {
  switch (dtype) {
  case DType::Float64:
  case DType::Int64:
    return 8;
  case DType::Float32:
  case DType::Int32:
    return 4;
  case DType::Float16:
  case DType::BFloat16:
  case DType::Int16:
    return 2;
  case DType::Int8:
  case DType::UInt8:
  case DType::Bool:
    return 1;
  }
  return 1;
}

bool hasDynamicSize(const ManifestTensor &t) {
  return std::find(t.shape.begin(), t.shape.end(), -1) != t.shape.end();
}

/// The C struct of a rank-`rank` MLIR memref descriptor. Element pointers
/// are `void *`: the layout is the same for every element type.
std::string descriptorStruct(const std::string &name, size_t rank) {
  std::string text = "typedef struct {\n  void *allocated;\n  void *aligned;\n"
                     "  int64_t offset;\n";
  if (rank)
    text += "  int64_t sizes[" + std::to_string(rank) +
            "];\n  int64_t strides[" + std::to_string(rank) + "];\n";
  return text + "} " + name + ";\n";
}

/// A C string literal of `text`.
std::string cString(const std::string &text) {
  std::string literal = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      literal += '\\';
    literal += c;
  }
  return literal + '"';
}

/// A lock on `path` (created if need be) until destroyed; flock, so it is
/// released when the process ends however it ends.
class FileLock {
public:
  static Result<FileLock> acquire(const std::string &path) {
    int fd =
        ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
      return Error("cannot open '" + path + "': " + std::strerror(errno));
    while (::flock(fd, LOCK_EX) != 0)
      if (errno != EINTR) {
        std::string why = std::strerror(errno);
        ::close(fd);
        return Error("cannot lock '" + path + "': " + why);
      }
    return FileLock(fd);
  }
  FileLock(FileLock &&other) noexcept : fd(other.fd) { other.fd = -1; }
  FileLock(const FileLock &) = delete;
  ~FileLock() {
    if (fd >= 0)
      ::close(fd);
  }

private:
  explicit FileLock(int fd) : fd(fd) {}
  int fd;
};

} // namespace

std::string trampolineSource(const std::string &fingerprint,
                             const std::string &manifestPath,
                             const std::vector<ManifestTensor> &inputs,
                             const std::vector<ManifestTensor> &results) {
  std::string symbol = "dice_k_" + fingerprint;
  std::ostringstream os;
  os << "// The C interface of @" << symbol
     << ": MLIR memref descriptors in,\n"
        "// dice_runtime_call of kernel "
     << fingerprint
     << " (docs/runtime.md). Compile with\n"
        "// -DDICE_KERNEL_DEVICE=<n> when the memrefs live on CUDA device "
        "<n>.\n"
        "#include \"dice/Runtime/DiceRuntime.h\"\n\n"
        "#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n\n"
        "#ifndef DICE_KERNEL_DEVICE\n#define DICE_KERNEL_DEVICE "
        "DICE_DEVICE_CPU\n#endif\n\n";

  auto descName = [&](const char *role, size_t i) {
    return symbol + "_" + role + std::to_string(i);
  };
  for (size_t i = 0; i < inputs.size(); ++i)
    os << descriptorStruct(descName("in", i), inputs[i].shape.size());
  for (size_t i = 0; i < results.size(); ++i)
    os << descriptorStruct(descName("out", i), results[i].shape.size());
  std::string resultType;
  if (results.size() > 1) {
    os << "typedef struct {\n";
    for (size_t i = 0; i < results.size(); ++i)
      os << "  " << descName("out", i) << " r" << i << ";\n";
    os << "} " << symbol << "_results;\n";
    resultType = symbol + "_results";
  } else if (results.size() == 1) {
    resultType = descName("out", 0);
  }

  os << "\nvoid _mlir_ciface_" << symbol << "(";
  std::vector<std::string> params;
  if (!results.empty())
    params.push_back(resultType + " *results");
  for (size_t i = 0; i < inputs.size(); ++i)
    params.push_back(descName("in", i) + " *a" + std::to_string(i));
  if (params.empty())
    os << "void";
  for (size_t i = 0; i < params.size(); ++i)
    os << (i ? ", " : "") << params[i];
  os << ") {\n";
  os << "  char error[1024];\n"
        "  const char *manifest = getenv(\"DICE_MANIFEST\");\n"
        "  if (dice_runtime_open(manifest ? manifest : "
     << cString(manifestPath)
     << ",\n"
        "                        error, sizeof error) != 0) {\n"
        "    fprintf(stderr, \"dice: %s\\n\", error);\n"
        "    abort();\n  }\n";

  // Ranks are fixed: the runtime reads and writes sizes and strides in the
  // descriptors' own arrays.
  auto entry = [&](const std::string &desc, const ManifestTensor &t,
                   bool isInput) {
    std::string data = isInput ? "(char *)" + desc + "aligned + " + desc +
                                     "offset * " +
                                     std::to_string(elementBytes(t.dtype))
                               : "NULL";
    std::string dims =
        t.shape.empty() ? "NULL, NULL" : desc + "sizes, " + desc + "strides";
    return "{" + data + ", " + std::to_string(t.shape.size()) + ", " + dims +
           ", " + std::to_string(dtypeCode(t.dtype)) + ", DICE_KERNEL_DEVICE}";
  };
  if (!inputs.empty()) {
    os << "  DiceMemRef inputs[" << inputs.size() << "] = {\n";
    for (size_t i = 0; i < inputs.size(); ++i)
      os << "      " << entry("a" + std::to_string(i) + "->", inputs[i], true)
         << ",\n";
    os << "  };\n";
  }
  auto resultDesc = [&](size_t i) {
    return results.size() == 1 ? std::string("results->")
                               : "results->r" + std::to_string(i) + ".";
  };
  if (!results.empty()) {
    os << "  DiceMemRef outputs[" << results.size() << "] = {\n";
    for (size_t i = 0; i < results.size(); ++i)
      os << "      " << entry(resultDesc(i), results[i], false) << ",\n";
    os << "  };\n";
  }
  // Host results of static shape are the caller's: allocated here with
  // malloc, contiguous, and filled by the runtime, so that MLIR's
  // deallocation (free of `allocated`) is right for them. Device results,
  // and results whose size only the kernel knows, stay the runtime's.
  bool anyOwned =
      std::any_of(results.begin(), results.end(),
                  [](const ManifestTensor &t) { return !hasDynamicSize(t); });
  if (anyOwned)
    os << "#if DICE_KERNEL_DEVICE == DICE_DEVICE_CPU\n";
  for (size_t i = 0; i < results.size(); ++i) {
    const ManifestTensor &t = results[i];
    if (hasDynamicSize(t))
      continue;
    std::string desc = resultDesc(i);
    int64_t stride = 1; // row-major; the element count at the end
    for (int64_t d = static_cast<int64_t>(t.shape.size()) - 1; d >= 0; --d) {
      os << "  " << desc << "sizes[" << d << "] = " << t.shape[d] << ";\n  "
         << desc << "strides[" << d << "] = " << stride << ";\n";
      stride *= t.shape[d];
    }
    os << "  outputs[" << i << "].data = malloc("
       << std::max<int64_t>(1, stride * elementBytes(t.dtype)) << ");\n"
       << "  if (!outputs[" << i << "].data) {\n"
       << "    fprintf(stderr, \"dice: out of memory for a result of "
       << fingerprint << "\\n\");\n    abort();\n  }\n";
  }
  if (anyOwned)
    os << "#endif\n";
  os << "  if (dice_runtime_call(\"" << fingerprint << "\", " << inputs.size()
     << ", " << (inputs.empty() ? "NULL" : "inputs") << ", " << results.size()
     << ", " << (results.empty() ? "NULL" : "outputs")
     << ", error,\n"
        "                        sizeof error) != 0) {\n"
        "    fprintf(stderr, \"dice: %s\\n\", error);\n"
        "    abort();\n  }\n";
  // The buffers malloc'd above, or the runtime's (dice_runtime_release).
  for (size_t i = 0; i < results.size(); ++i) {
    std::string desc = resultDesc(i);
    os << "  " << desc << "allocated = " << desc << "aligned = outputs[" << i
       << "].data;\n  " << desc << "offset = 0;\n";
  }
  os << "}\n";
  return os.str();
}

Result<std::vector<uint8_t>> readKernelLibrary(const std::string &path) {
  Result<std::string> bytes = readFile(path);
  if (!bytes)
    return Error(path,
                 "cannot read the kernel library: " + bytes.error().message);
  return std::vector<uint8_t>(bytes->begin(), bytes->end());
}

Result<std::string> placeStoredLibrary(const std::string &dir,
                                       const std::string &hash,
                                       const std::vector<uint8_t> &bytes,
                                       const ArtifactWriter &write) {
  std::filesystem::path folder = std::filesystem::path(dir) / "db";
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec)
    return Error("cannot create '" + folder.string() + "': " + ec.message());
  std::string path = (folder / (hash + ".so")).string();
  std::string_view data(reinterpret_cast<const char *>(bytes.data()),
                        bytes.size());
  Result<std::string> existing = readFile(path);
  if (!existing || *existing != data)
    if (Status written = write(path, data); !written)
      return written.error();
  return path;
}

Result<std::string> prepareArtifactsDir(const std::string &dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return Error("cannot create artifacts directory '" + dir +
                 "': " + ec.message());
  std::filesystem::path manifest =
      std::filesystem::absolute(dir, ec).lexically_normal() / "manifest.json";
  if (ec)
    return Error("cannot make '" + dir + "' absolute: " + ec.message());
  return manifest.string();
}

Result<ManifestKernel> writeKernelArtifacts(const std::string &dir,
                                            const std::string &manifestPath,
                                            const LoweredKernel &kernel,
                                            const ArtifactWriter &write) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(kernel.builtLibrary, ec))
    return Error("artifact '" + kernel.builtLibrary +
                 "' does not exist or is not a file");
  Result<std::string> built = readFile(kernel.builtLibrary);
  if (!built)
    return Error("cannot read artifact '" + kernel.builtLibrary +
                 "': " + built.error().message);

  const std::string &fp = kernel.fingerprint;
  std::string library = "k_" + fp + ".so";
  std::filesystem::path libraryPath = std::filesystem::path(dir) / library;
  // A library that a running process has mapped must not change under it:
  // the same bytes are left alone, new ones get a new inode (a rename).
  Result<std::string> existing = readFile(libraryPath.string());
  if (!existing || *existing != *built)
    if (Status written = write(libraryPath.string(), *built); !written)
      return written.error();
  std::filesystem::path trampolinePath =
      std::filesystem::path(dir) / ("k_" + fp + ".ciface.c");
  if (Status written = write(
          trampolinePath.string(),
          trampolineSource(fp, manifestPath, kernel.inputs, kernel.results));
      !written)
    return written.error();

  ManifestKernel entry;
  entry.library = library;
  entry.operatorName = "dice::k_" + fp;
  entry.symbol = "dice_k_" + fp;
  entry.inputs = kernel.inputs;
  entry.results = kernel.results;
  entry.verdictJson = kernel.verdictJson;
  return entry;
}

Status mergeIntoManifest(const std::string &manifestPath,
                         const std::map<std::string, ManifestKernel> &entries,
                         const ArtifactWriter &write) {
  // The lock is a file of its own: the manifest is replaced by renames.
  Result<FileLock> lock = FileLock::acquire(manifestPath + ".lock");
  if (!lock)
    return lock.error();
  Manifest manifest;
  std::error_code ec;
  if (std::filesystem::exists(manifestPath, ec)) {
    Result<Manifest> read = readManifest(manifestPath);
    if (!read) {
      Error error = read.error();
      error.file = manifestPath;
      error.message = "cannot merge into this manifest: " +
                      (error.key.empty() ? "" : error.key + ": ") +
                      error.message;
      error.key.clear();
      return error;
    }
    manifest = read.take();
  }
  for (const auto &[fp, entry] : entries)
    manifest.kernels[fp] = entry;
  Result<std::string> text = printManifest(manifest);
  if (!text)
    return text.error();
  return write(manifestPath, *text);
}

} // namespace dice
