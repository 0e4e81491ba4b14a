//===- DeviceLock.h - timing alone on a GPU shared by workers ---*- C++ -*-===//
//
// Several workers check candidates on one GPU at once; a timed run must
// have the GPU to itself, or another worker's kernels slow it down. A
// worker holds the device lock shared while it uses the GPU and
// exclusively while it times (and while it measures the device's speed at
// start). The lock is flock(2) on a file the verifier creates and names in
// $DICE_DEVICE_LOCK; a worker that dies releases it with its descriptors.
// A second file, `<lock>.turnstile`, gives a waiting timer precedence over
// new shared holders, so timing is never starved by a stream of checks.
//
// Holds do not nest: each guard takes the lock from nothing and gives it
// back, so a release never waits. Waiting is bounded per request (the
// budget): a candidate that hangs while another worker waits must cost
// that worker a retry, not a watchdog kill and a wrong `crashed` verdict.
// Without $DICE_DEVICE_LOCK (one worker) every call is a no-op. Private to
// DiceVerifierWorker.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_VERIFIERWORKER_DEVICELOCK_H
#define DICE_VERIFIERWORKER_DEVICELOCK_H

#include <string>

namespace dice {

/// Thrown when a request's waiting budget ran out before the lock came.
struct DeviceLockTimeout {
  double waitedSeconds = 0;
};

class DeviceLock {
public:
  enum class Mode { None, Shared, Exclusive };

  /// The process's lock, opened from $DICE_DEVICE_LOCK at first use.
  static DeviceLock &process();

  /// Holds `mode` (from nothing) until the guard goes. Throws
  /// DeviceLockTimeout when the budget runs out first.
  class Guard {
  public:
    Guard(DeviceLock &lock, Mode mode) : lock(lock) { lock.acquire(mode); }
    ~Guard() { lock.release(); }
    Guard(const Guard &) = delete;
    Guard &operator=(const Guard &) = delete;

  private:
    DeviceLock &lock;
  };

  Guard shared() { return Guard(*this, Mode::Shared); }
  Guard exclusive() { return Guard(*this, Mode::Exclusive); }

  /// The seconds the next request may spend waiting for the lock, in all;
  /// 0 or less: no bound (the worker's start).
  void setWaitBudget(double seconds) { budget = seconds; }

  /// Called between steps of a long shared hold: when a timer waits for
  /// the exclusive hold, gives the lock up and takes it back behind the
  /// timer, so a timer waits for one step of ours, not for all of them.
  void yieldToTimers();

  /// Milliseconds spent waiting for the lock since the last call.
  double takeWaitedMs() {
    double ms = waitedMs;
    waitedMs = 0;
    return ms;
  }

  /// Whether the lock coordinates anything (a file is open).
  bool active() const { return mainFd >= 0; }
  /// Why $DICE_DEVICE_LOCK names files that cannot be opened; empty when
  /// it is unset or they opened. A worker asked to share the GPU without
  /// the lock does not start.
  const std::string &error() const { return openError; }

private:
  DeviceLock();
  void acquire(Mode mode);
  /// Gives the lock up; the device is synchronized first, so none of this
  /// worker's kernels run after.
  void release();
  /// flock `operation` without blocking, retried until it succeeds or the
  /// budget is spent.
  void lockWithin(int fd, int operation);

  int mainFd = -1, turnstileFd = -1;
  Mode mode = Mode::None;
  double budget = 0;
  double waitedMs = 0;
  std::string openError;
};

} // namespace dice

#endif // DICE_VERIFIERWORKER_DEVICELOCK_H
