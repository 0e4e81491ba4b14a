//===- FuzzTarget.cpp - scratch files and property failures ---------------===//

#include "FuzzTarget.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace fs = std::filesystem;

namespace dice::fuzz {
namespace {

fs::path scratchRoot() {
  const char *tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? fs::path(tmp) : fs::path("/tmp");
}

/// Unique within the process and across processes (libFuzzer's -fork and
/// -jobs run several at once).
std::string uniqueName(std::string_view stem) {
  static unsigned counter = 0;
  return "dice-fuzz-" + std::string(stem) + "-" + std::to_string(getpid()) +
         "-" + std::to_string(counter++);
}

} // namespace

void propertyFailed(const char *condition, const std::string &what,
                    const char *file, int line) {
  std::fprintf(stderr, "%s:%d: fuzz property violated: %s\n  %s\n", file, line,
               condition, what.c_str());
  std::fflush(stderr);
  std::abort();
}

ScratchFile::ScratchFile(std::string_view suffix)
    : filePath((scratchRoot() / (uniqueName("file") + std::string(suffix)))
                   .string()) {}

ScratchFile::~ScratchFile() {
  std::error_code ec;
  for (const char *companion : {"", "-wal", "-shm", "-journal"})
    fs::remove(filePath + companion, ec);
}

bool ScratchFile::write(const uint8_t *data, size_t size) const {
  std::ofstream out(filePath, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(data),
            static_cast<std::streamsize>(size));
  return static_cast<bool>(out.flush());
}

ScratchDir::ScratchDir() : dirPath((scratchRoot() / uniqueName("dir")).string()) {
  fs::create_directories(dirPath);
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  fs::remove_all(dirPath, ec);
}

bool ScratchDir::write(const std::string &name, std::string_view contents) const {
  std::ofstream out(fs::path(dirPath) / name, std::ios::binary | std::ios::trunc);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  return static_cast<bool>(out.flush());
}

} // namespace dice::fuzz
