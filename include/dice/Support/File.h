//===- File.h - whole-file reads and writes ----------------------*- C++ -*-===//

#ifndef DICE_SUPPORT_FILE_H
#define DICE_SUPPORT_FILE_H

#include "dice/Support/Result.h"

#include <string>
#include <string_view>

namespace dice {

/// The bytes of the file at `path`, or an error naming it and saying why
/// (missing, a folder, unreadable).
Result<std::string> readFile(const std::string &path);

/// Replaces the file at `path` by `bytes` through a temporary file beside it
/// (`<path>.tmp.<pid>.<n>`) and a rename: a concurrent reader, and the next
/// run after this process is killed, finds the old file or the new one,
/// never a part of either, and a library a process has mapped keeps its
/// inode. A temporary file left by a killed process is never read. A file
/// it replaces keeps its permissions.
Status writeFileAtomically(const std::string &path, std::string_view bytes);

/// Creates the folder `path` and those above it that are missing
/// (`mkdir -p`), new ones with `mode` (less the umask); fails with errno set.
bool makeDirectories(const std::string &path, unsigned mode = 0777);

/// Removes `path` and everything under it, links not followed (`rm -rf`),
/// folders without permissions included (their owner's rights are granted
/// first, as a sandboxed worker may leave them); a missing path is no error. POSIX calls only, so that code linked with
/// LibTorch may use it: libtorch.so exports its own std::filesystem
/// functions, and its remove_all crashes on a folder that is not empty.
Status removeTree(const std::string &path);

} // namespace dice

#endif // DICE_SUPPORT_FILE_H
