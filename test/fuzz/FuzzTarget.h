//===- FuzzTarget.h - what every fuzz target shares -------------*- C++ -*-===//
//
// Each fuzz target defines LLVMFuzzerTestOneInput (and, where it needs state
// built once, LLVMFuzzerInitialize). The same source links either with
// libFuzzer (DICE_ENABLE_FUZZING: `scripts/fuzz.sh` explores) or with
// FuzzReplayMain.cpp (every build: ctest replays the committed corpus), so a
// finding fixed once stays fixed.
//
// A target asserts properties, not only "no crash": a violated property
// aborts through DICE_FUZZ_CHECK, which libFuzzer records as a finding and
// the replay driver as a failed test.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_TEST_FUZZ_FUZZTARGET_H
#define DICE_TEST_FUZZ_FUZZTARGET_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv);

namespace dice::fuzz {

inline std::string_view asText(const uint8_t *data, size_t size) {
  return {reinterpret_cast<const char *>(data), size};
}

/// Prints the broken property with its place and aborts.
[[noreturn]] void propertyFailed(const char *condition, const std::string &what,
                                 const char *file, int line);

/// A file of this process's own under $TMPDIR (or /tmp) that readers which
/// take a path can be pointed at; removed, with any `-wal`/`-shm`/`-journal`
/// companions, when it goes out of scope.
class ScratchFile {
public:
  explicit ScratchFile(std::string_view suffix);
  ~ScratchFile();
  ScratchFile(const ScratchFile &) = delete;
  ScratchFile &operator=(const ScratchFile &) = delete;

  /// Replaces the file's contents; false if it could not be written.
  bool write(const uint8_t *data, size_t size) const;
  const std::string &path() const { return filePath; }

private:
  std::string filePath;
};

/// A fresh directory under $TMPDIR (or /tmp), removed with its contents.
class ScratchDir {
public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir &) = delete;
  ScratchDir &operator=(const ScratchDir &) = delete;

  const std::string &path() const { return dirPath; }
  /// Writes `name` inside the directory; false on failure.
  bool write(const std::string &name, std::string_view contents) const;

private:
  std::string dirPath;
};

} // namespace dice::fuzz

#define DICE_FUZZ_CHECK(condition, what)                                       \
  do {                                                                         \
    if (!(condition))                                                          \
      ::dice::fuzz::propertyFailed(#condition, (what), __FILE__, __LINE__);    \
  } while (false)

#endif // DICE_TEST_FUZZ_FUZZTARGET_H
