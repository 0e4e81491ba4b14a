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
  // A file it replaces keeps its permissions; a new one gets 0666 less
  // the umask, like any other. O_EXCL and O_NOFOLLOW: a link planted at the
  // temporary name is not followed.
  struct stat old;
  mode_t mode = ::stat(path.c_str(), &old) == 0 ? (old.st_mode & 07777) : 0666;
  int fd = ::open(temp.c_str(),
                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd >= 0 && ::stat(path.c_str(), &old) == 0)
    ::fchmod(fd, old.st_mode & 07777); // the umask took some bits away
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

bool dice::makeDirectories(const std::string &path, unsigned mode) {
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    std::string prefix = path.substr(0, slash);
    if (::mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST)
      return false;
    if (slash == std::string::npos)
      return true;
  }
}

namespace {
/// The first error of the removal nftw is running in this thread.
thread_local int removalError = 0;

int removeEntry(const char *path, const struct stat *, int, struct FTW *) {
  if (std::remove(path) != 0 && errno != ENOENT && !removalError)
    removalError = errno;
  return 0;
}

/// Whether the last grantAccess walk changed a folder's mode.
thread_local bool grantedAccess = false;

/// Gives the owner every right on a folder, so its entries can be listed
/// and removed: what a sandboxed worker leaves may have none.
int grantAccess(const char *path, const struct stat *info, int type,
                struct FTW *) {
  if ((type == FTW_D || type == FTW_DNR) &&
      (info->st_mode & S_IRWXU) != S_IRWXU && ::chmod(path, 0700) == 0)
    grantedAccess = true;
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
  // A folder nftw could not read hides the folders below it until it is
  // opened up, so walk again until nothing changes.
  if (S_ISDIR(info.st_mode))
    do {
      grantedAccess = false;
      ::nftw(path.c_str(), grantAccess, 16, FTW_PHYS);
    } while (grantedAccess);
  removalError = 0;
  if (::nftw(path.c_str(), removeEntry, 16, FTW_DEPTH | FTW_PHYS) != 0 &&
      !removalError)
    removalError = errno;
  if (removalError)
    return Error(path, std::string("cannot remove: ") +
                           std::strerror(removalError));
  return {};
}
