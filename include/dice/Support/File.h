//===- File.h - whole-file reads ---------------------------------*- C++ -*-===//

#ifndef DICE_SUPPORT_FILE_H
#define DICE_SUPPORT_FILE_H

#include "dice/Support/Result.h"

#include <string>

namespace dice {

/// The bytes of the file at `path`, or an error naming it and saying why
/// (missing, a folder, unreadable).
Result<std::string> readFile(const std::string &path);

} // namespace dice

#endif // DICE_SUPPORT_FILE_H
