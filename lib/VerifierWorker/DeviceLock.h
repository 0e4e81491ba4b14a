//===- DeviceLock.h - timing alone on a GPU shared by workers ---*- C++ -*-===//
//
// Several workers check candidates on one GPU at once; a timed run must
// have the GPU to itself, or another worker's kernels slow it down. Every
// worker holds the device lock shared while it uses the GPU and exclusively
// while it times (and while it measures the device's speed at start). The
// lock is flock(2) on a file the verifier creates and names in
// $DICE_DEVICE_LOCK; a worker that dies releases it with its descriptors.
// A second file, `<lock>.turnstile`, gives a waiting timer precedence over
// new shared holders, so timing is never starved by a stream of checks.
// Without $DICE_DEVICE_LOCK (one worker) every call is a no-op. Private to
// DiceVerifierWorker.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_VERIFIERWORKER_DEVICELOCK_H
#define DICE_VERIFIERWORKER_DEVICELOCK_H

#include <string>

namespace dice {

class DeviceLock {
public:
  enum class Mode { None, Shared, Exclusive };

  /// The process's lock, opened from $DICE_DEVICE_LOCK at first use.
  static DeviceLock &process();

  /// Holds `mode` until the guard goes, then returns to the mode before.
  class Guard {
  public:
    Guard(DeviceLock &lock, Mode mode) : lock(lock), previous(lock.mode) {
      lock.hold(mode);
    }
    ~Guard() { lock.hold(previous); }
    Guard(const Guard &) = delete;
    Guard &operator=(const Guard &) = delete;

  private:
    DeviceLock &lock;
    Mode previous;
  };

  Guard shared() { return Guard(*this, Mode::Shared); }
  Guard exclusive() { return Guard(*this, Mode::Exclusive); }

  /// Whether the lock coordinates anything (a file is open).
  bool active() const { return mainFd >= 0; }
  /// Why $DICE_DEVICE_LOCK names files that cannot be opened; empty when
  /// it is unset or they opened. A worker asked to share the GPU without
  /// the lock does not start.
  const std::string &error() const { return openError; }

private:
  DeviceLock();
  /// Moves to `next`: the device is synchronized before a held mode is
  /// given up, so none of this worker's kernels run after it.
  void hold(Mode next);

  int mainFd = -1, turnstileFd = -1;
  Mode mode = Mode::None;
  std::string openError;
};

} // namespace dice

#endif // DICE_VERIFIERWORKER_DEVICELOCK_H
