//===- WorkerPool.h - sandboxed worker processes ----------------*- C++ -*-===//
//
// Generated kernels run only in worker processes that this pool starts,
// feeds and replaces. A worker that crashes, hangs or poisons its CUDA
// context costs the request it was serving, never the caller: the pool
// reports what happened and starts a fresh worker for the next request.
//
// Protocol (one JSON object per line, UTF-8, '\n'-terminated):
//
//  * Start. The worker runs as the caller's argv, where an argument
//    `{scratch}` is replaced by the worker's scratch directory, with
//      - stdin: the request pipe,
//      - fd 3: the reply pipe (write end),
//      - stdout and stderr appended to `<scratch>/worker.log`,
//      - a session and process group of its own (setsid), working
//        directory `<scratch>`, every other descriptor closed,
//      - the caller's environment plus TMPDIR=HOME=DICE_WORKER_SCRATCH=
//        `<scratch>` and CUDA_CACHE_PATH=`<scratch>/cuda-cache`,
//      - the sandbox of Sandbox.h.
//    Each worker slot has its scratch directory `<scratchRoot>/worker-<n>`,
//    recreated empty whenever a worker starts in the slot.
//  * Ready. The worker's first line on fd 3 is `{"ready": true, ...}` (any
//    further fields, e.g. the GPU and driver names, which the pool keeps:
//    readyJson()) or `{"ready": false, "error": "..."}`.
//  * Requests. The pool writes the caller's request object, with `"id"`
//    (an integer) added, as one line to stdin; the worker answers with one
//    line on fd 3 carrying the same `"id"`, and the whole reply object is
//    the caller's. A reply with `"exit": true` announces that the worker
//    exits after it (its CUDA context is poisoned): the pool reaps it and
//    starts a replacement before the slot's next request.
//  * Failures. A worker that dies before replying, or does not reply within
//    the request's timeout (its whole process group gets SIGKILL), is
//    replaced; the outcome names the signal or exit code and carries the
//    tail of its log (at most its last 64 KiB, read through the descriptor
//    the pool opened before the worker started: a worker that renames the
//    file or puts a FIFO or a link in its place changes nothing). A reply
//    that is not a JSON object with the request's id is a protocol error
//    and the worker is replaced too. A worker that fails to start (exec
//    fails, it dies, says ready:false or stays silent past the start
//    timeout) is retried; after `maxStartFailures` consecutive failures the
//    pool gives up and every pending and later request is an error naming
//    the last failure. A sandbox skip list that names an unknown measure
//    (SandboxOptions::skip, $DICE_SANDBOX_SKIP) starts no worker at all:
//    every request is an error naming it.
//  * Shutdown. The pool closes the workers' stdin (end of input means
//    exit), waits a short grace period, then kills what is left.
//
// Plain C++ and POSIX/Linux; no LLVM, no LibTorch.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_SANDBOX_WORKERPOOL_H
#define DICE_SANDBOX_WORKERPOOL_H

#include "dice/Sandbox/Sandbox.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace dice {

struct WorkerPoolOptions {
  /// The worker command; argv[0] is a path (not searched in PATH). Any
  /// argument equal to "{scratch}" becomes the worker's scratch directory.
  std::vector<std::string> argv;
  unsigned workers = 1;
  /// Holds one scratch directory per worker slot. Empty: a fresh directory
  /// under $TMPDIR, removed with the pool.
  std::string scratchRoot;
  /// Start all workers at construction (a GPU worker initialises CUDA once
  /// and then serves many requests); otherwise at the first request.
  bool startEagerly = true;
  /// From exec to the ready line.
  double startTimeoutSeconds = 120;
  /// Consecutive start failures after which the pool stops respawning.
  unsigned maxStartFailures = 3;
  /// How long the destructor waits for workers to exit after closing their
  /// stdin before it kills them.
  double shutdownGraceSeconds = 2;
  /// Keep the scratch directories when the pool is destroyed.
  bool keepScratch = false;
  /// Extra environment entries (`NAME=value`) for the workers.
  std::vector<std::string> environment;
  /// Resource limits and measures; scratchDir is set per worker.
  SandboxOptions sandbox;
};

/// What became of one request.
struct WorkerOutcome {
  enum class Status {
    Replied,  ///< the worker answered; `reply` holds the whole object
    Crashed,  ///< the worker died before answering
    TimedOut, ///< no answer within the timeout; the worker was killed
    Error,    ///< bad request, protocol violation, or no worker could start
  };
  Status status = Status::Error;
  std::string reply;     ///< the reply object (JSON text), Replied only
  bool workerExits = false; ///< the reply said `"exit": true`
  int exitCode = -1;     ///< Crashed: the worker's exit status, or -1
  int signal = 0;        ///< Crashed/TimedOut: the signal that ended it
  std::string signalName; ///< "SIGSEGV", "SIGKILL", ...
  std::string error;     ///< Error: what went wrong, a sentence
  double seconds = 0;    ///< from sending the request to its outcome
  pid_t workerPid = 0;
  unsigned workerSlot = 0;
  /// Crashed/TimedOut/Error: the last lines of the worker's log.
  std::string logTail;

  bool replied() const { return status == Status::Replied; }
  /// One line for a user: "worker 4711 crashed (SIGSEGV) after 0.02 s".
  std::string describe() const;
};

struct WorkerPoolCounters {
  uint64_t requests = 0;     ///< sent to a worker
  uint64_t crashes = 0;      ///< workers that died serving a request
  uint64_t timeouts = 0;     ///< workers killed at a deadline
  uint64_t replacements = 0; ///< workers started after the first of a slot
  uint64_t startFailures = 0;
  uint64_t protocolErrors = 0;
};

class WorkerPool {
public:
  explicit WorkerPool(WorkerPoolOptions options);
  ~WorkerPool();
  WorkerPool(const WorkerPool &) = delete;
  WorkerPool &operator=(const WorkerPool &) = delete;

  /// Sends each request (a JSON object, as text) to an idle worker, one
  /// request per worker at a time, and returns the outcomes in request
  /// order. `timeoutSeconds` bounds each request from the moment it is
  /// sent (0: no limit). Calls from several threads are served one after
  /// another. `progress` hears of each finished request (from the pool's
  /// thread, under its lock: it must not call the pool).
  std::vector<WorkerOutcome>
  run(const std::vector<std::string> &requestJsonObjects,
      double timeoutSeconds,
      const std::function<void(size_t done, size_t total)> &progress = {});

  /// Blocks until every slot has a ready worker or the pool gave up
  /// starting them (or `timeoutSeconds` passed); true when at least one
  /// worker is ready. Starts the workers if they are not started.
  bool waitUntilReady(double timeoutSeconds);

  /// The latest ready object (JSON text); empty before the first.
  std::string readyJson() const;
  /// Why the pool gave up starting workers; empty while it has not.
  std::string startError() const;
  /// The sandbox report of the latest worker started, if any.
  std::optional<SandboxReport> sandboxReport() const;
  /// Each measure that could not be applied, once per pool. Workers start
  /// on the pool's thread: this is empty until one has been set up, so read
  /// it after run() or waitUntilReady().
  std::vector<std::string> sandboxNotes() const;
  WorkerPoolCounters counters() const;
  const std::string &scratchRoot() const;

private:
  class Supervisor;
  std::unique_ptr<Supervisor> supervisor;
};

} // namespace dice

#endif // DICE_SANDBOX_WORKERPOOL_H
