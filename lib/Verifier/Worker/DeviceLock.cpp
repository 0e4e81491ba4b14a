//===- DeviceLock.cpp - timing alone on a GPU shared by workers -----------===//

#include "DeviceLock.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <sys/file.h>
#include <thread>
#include <unistd.h>

namespace dice {

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

void DeviceLock::lockWithin(int fd, int operation) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  // Short pauses: a hand-over is on the critical path of every timed run,
  // and a waiter that sleeps long after the lock came free idles the GPU.
  auto pause = std::chrono::microseconds(20);
  while (flock(fd, operation | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR)
      // Without the lock, timed runs would share the GPU: never go on.
      throw std::runtime_error(std::string("the device lock cannot be taken (flock: ") +
                               std::strerror(errno) + ")");
    double waited = std::chrono::duration<double>(Clock::now() - start).count();
    if (budget > 0 && waited >= budget) {
      budget = 1e-9; // spent: the next wait fails at once
      throw DeviceLockTimeout{waited};
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(250));
  }
  double waited = std::chrono::duration<double>(Clock::now() - start).count();
  waitedMs += waited * 1e3;
  if (budget > 0)
    budget = std::max(1e-9, budget - waited);
}

void DeviceLock::acquire(Mode next) {
  if (!active() || next == Mode::None)
    return;
  release();
  // Through the turnstile: a timer waiting inside it keeps new shared
  // holders out until the current ones have left.
  lockWithin(turnstileFd, LOCK_EX);
  try {
    lockWithin(mainFd, next == Mode::Exclusive ? LOCK_EX : LOCK_SH);
  } catch (...) {
    flock(turnstileFd, LOCK_UN);
    throw;
  }
  flock(turnstileFd, LOCK_UN);
  mode = next;
}

void DeviceLock::yieldToTimers() {
  if (!active() || mode != Mode::Shared)
    return;
  // A free turnstile: nobody waits to time.
  if (flock(turnstileFd, LOCK_EX | LOCK_NB) == 0) {
    flock(turnstileFd, LOCK_UN);
    return;
  }
  acquire(Mode::Shared);
}

void DeviceLock::release() {
  if (!active() || mode == Mode::None)
    return;
  // Our queued kernels are part of what the lock covers.
  (void)cudaDeviceSynchronize();
  flock(mainFd, LOCK_UN);
  mode = Mode::None;
}

} // namespace dice
