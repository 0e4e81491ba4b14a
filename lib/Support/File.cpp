//===- File.cpp - whole-file reads and writes ----------------------------===//

#include "dice/Support/File.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <ftw.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

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

dice::Status dice::writeFileAtomically(const std::string &path,
                                       std::string_view bytes) {
  // Unique per process and per call: threads may write the same path.
  static std::atomic<unsigned> counter{0};
  std::string temp = path + ".tmp." + std::to_string(::getpid()) + "." +
                     std::to_string(counter++);
  auto fail = [&](const char *what) -> Status {
    Error error(path, std::string(what) + ": " + std::strerror(errno));
    ::unlink(temp.c_str());
    return error;
  };
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return fail("cannot write");
  for (size_t done = 0; done < bytes.size();) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int saved = errno;
      ::close(fd);
      errno = saved;
      return fail("cannot write");
    }
    done += size_t(n);
  }
  if (::close(fd) != 0)
    return fail("cannot write");
  if (std::rename(temp.c_str(), path.c_str()) != 0)
    return fail("cannot replace");
  return {};
}

namespace {
/// The first error of the removal nftw is running in this thread.
thread_local int removalError = 0;

int removeEntry(const char *path, const struct stat *, int, struct FTW *) {
  if (std::remove(path) != 0 && errno != ENOENT && !removalError)
    removalError = errno;
  return 0;
}
} // namespace

dice::Status dice::removeTree(const std::string &path) {
  struct stat info;
  if (::lstat(path.c_str(), &info) != 0)
    return errno == ENOENT
               ? Status()
               : Status(Error(path, std::string("cannot remove: ") +
                                        std::strerror(errno)));
  removalError = 0;
  if (::nftw(path.c_str(), removeEntry, 16, FTW_DEPTH | FTW_PHYS) != 0 &&
      !removalError)
    removalError = errno;
  if (removalError)
    return Error(path, std::string("cannot remove: ") +
                           std::strerror(removalError));
  return {};
}
