//===- DeviceLock.cpp - timing alone on a GPU shared by workers -----------===//

#include "DeviceLock.h"

#include <cuda_runtime_api.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/file.h>
#include <unistd.h>

namespace dice {
namespace {

/// flock that retries when a signal interrupts the wait.
void lockFile(int fd, int operation) {
  while (flock(fd, operation) != 0 && errno == EINTR) {
  }
}

} // namespace

DeviceLock &DeviceLock::process() {
  static DeviceLock lock;
  return lock;
}

DeviceLock::DeviceLock() {
  const char *path = std::getenv("DICE_DEVICE_LOCK");
  if (!path || !*path)
    return;
  // Read-only opens: flock needs no write access, and each worker's own
  // open file description is what makes the locks exclude each other.
  mainFd = open(path, O_RDONLY | O_CLOEXEC);
  turnstileFd = open((std::string(path) + ".turnstile").c_str(),
                     O_RDONLY | O_CLOEXEC);
  if (mainFd < 0 || turnstileFd < 0) {
    openError = std::string("DICE_DEVICE_LOCK names ") + path +
                ", whose lock files cannot be opened: " + std::strerror(errno);
    if (mainFd >= 0)
      close(mainFd);
    if (turnstileFd >= 0)
      close(turnstileFd);
    mainFd = turnstileFd = -1;
  }
}

void DeviceLock::hold(Mode next) {
  if (!active() || next == mode)
    return;
  if (mode != Mode::None) {
    // Our queued kernels are part of what the lock covers.
    (void)cudaDeviceSynchronize();
    lockFile(mainFd, LOCK_UN);
  }
  mode = next;
  if (next == Mode::None)
    return;
  // Through the turnstile: a timer waiting inside it keeps new shared
  // holders out until the current ones have left.
  lockFile(turnstileFd, LOCK_EX);
  lockFile(mainFd, next == Mode::Exclusive ? LOCK_EX : LOCK_SH);
  lockFile(turnstileFd, LOCK_UN);
}

} // namespace dice
