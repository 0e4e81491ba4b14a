//===- File.cpp - whole-file reads ---------------------------------------===//

#include "dice/Support/File.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

dice::Result<std::string> dice::readFile(const std::string &path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0)
    return Error(path, std::string("cannot read: ") + std::strerror(errno));
  if (S_ISDIR(info.st_mode))
    return Error(path, "cannot read: is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error(path, std::string("cannot read: ") + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    return Error(path, "cannot read: I/O error");
  return text.str();
}
