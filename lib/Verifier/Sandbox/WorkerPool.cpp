//===- WorkerPool.cpp - sandboxed worker processes ------------------------===//
//
// One supervisor thread owns every worker: it forks them, writes requests,
// reads replies and enforces deadlines in a poll loop. It is a thread of its
// own, not the caller's, because PR_SET_PDEATHSIG fires when the thread that
// forked a child exits: workers forked by a short-lived caller thread would
// die with it.
//
//===----------------------------------------------------------------------===//

#include "dice/Sandbox/WorkerPool.h"
#include "dice/Support/File.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace dice {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Longest reply line accepted; a worker that streams more without a
/// newline is broken or hostile.
constexpr size_t kMaxLineBytes = size_t(64) << 20;
constexpr unsigned kLogTailLines = 20;
constexpr size_t kLogTailBytes = 65536;
/// A process closes its descriptors before it becomes waitable: the end of
/// the reply pipe is taken for a closed pipe only after this long.
constexpr auto kExitGrace = std::chrono::seconds(2);

std::string signalName(int signal) {
  if (const char *abbrev = sigabbrev_np(signal))
    return std::string("SIG") + abbrev;
  return "signal " + std::to_string(signal);
}

/// The last `lines` lines of the worker's log, read from the pool's own
/// descriptor of it (a worker may rename the file, or put a FIFO or a link
/// in its place), at most the last kLogTailBytes, each line cut to a
/// readable length (a worker may print megabytes without a newline).
std::string readLogTail(int fd, unsigned lines) {
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    return "";
  off_t start = std::max<off_t>(0, st.st_size - off_t(kLogTailBytes));
  std::string text(size_t(st.st_size - start), '\0');
  size_t got = 0;
  while (got < text.size()) {
    ssize_t n =
        pread(fd, text.data() + got, text.size() - got, start + off_t(got));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    got += size_t(n);
  }
  text.resize(got);
  std::vector<std::string> all;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) {
    if (line.size() > 400)
      line = line.substr(0, 400) + "...";
    all.push_back(std::move(line));
  }
  // The first line of a cut-off window is partial.
  if (start > 0 && !all.empty())
    all.erase(all.begin());
  size_t first = all.size() > lines ? all.size() - lines : 0;
  std::string tail;
  for (size_t i = first; i < all.size(); ++i)
    tail += all[i] + "\n";
  return tail;
}

/// What the child sends through its status pipe before exec (and again if
/// exec fails).
struct ChildStatus {
  SandboxReport sandbox;
  int32_t failedStep = 0; ///< a ChildStep, 0 when set up
  int32_t error = 0;
};

enum ChildStep : int32_t {
  StepNone,
  StepDescriptors,
  StepDirectory,
  StepExec,
};

const char *childStepName(int32_t step) {
  switch (step) {
  case StepDescriptors:
    return "setting up descriptors";
  case StepDirectory:
    return "entering the scratch directory";
  case StepExec:
    return "exec";
  }
  return "setup";
}

void closeFd(int &fd) {
  if (fd >= 0)
    close(fd);
  fd = -1;
}

} // namespace

std::string WorkerOutcome::describe() const {
  char time[32];
  std::snprintf(time, sizeof(time), "%.2f s", seconds);
  std::string worker = "worker " + std::to_string(workerPid);
  switch (status) {
  case Status::Replied:
    return worker + " replied after " + time +
           (workerExits ? " and exits" : "");
  case Status::Crashed:
    if (signal)
      return worker + " crashed (" + signalName + ") after " + time;
    return worker + " exited with status " + std::to_string(exitCode) +
           " before replying, after " + time;
  case Status::TimedOut:
    return worker + " did not reply within " + time + " and was killed";
  case Status::Error:
    return error;
  }
  return error;
}

//===----------------------------------------------------------------------===//
// Supervisor
//===----------------------------------------------------------------------===//

class WorkerPool::Supervisor {
public:
  explicit Supervisor(WorkerPoolOptions options);
  ~Supervisor();

  std::vector<WorkerOutcome>
  run(const std::vector<std::string> &requests, double timeoutSeconds,
      const std::function<void(size_t, size_t)> &progress);
  bool waitUntilReady(double timeoutSeconds);

  // Read by the pool's accessors under `mutex`.
  mutable std::mutex mutex;
  std::string readyJson;
  std::string startError;
  std::optional<SandboxReport> sandboxReport;
  std::vector<std::string> sandboxNotes;
  WorkerPoolCounters counters;
  const WorkerPoolOptions opts;
  std::string scratchRoot;

private:
  struct Worker {
    enum class State { Down, Starting, Idle, Busy, Exiting };
    State state = State::Down;
    unsigned slot = 0;
    unsigned starts = 0;
    pid_t pid = 0;
    int pidFd = -1;
    int requestFd = -1; ///< write end of the worker's stdin
    int replyFd = -1;   ///< read end of the worker's fd 3
    /// The worker's log as the pool created it, kept until the slot's next
    /// start: the tail is read from it, never from the path, which the
    /// worker controls.
    int logFd = -1;
    std::string scratch, logPath;
    std::string input, output;
    Clock::time_point startedAt, sentAt, deadline;
    /// When the reply pipe reached its end while the process still ran.
    std::optional<Clock::time_point> replyClosedAt;
    size_t request = 0; ///< index in the batch while Busy
    uint64_t requestId = 0;
  };

  struct Batch {
    std::vector<nlohmann::json> requests;
    std::vector<WorkerOutcome> outcomes;
    std::deque<size_t> queue;
    size_t remaining = 0, total = 0; ///< requests sent to workers
    double timeoutSeconds = 0;
    bool finished = false;
    std::function<void(size_t, size_t)> progress;

    /// One more request has its outcome.
    void finishOne() {
      --remaining;
      if (progress)
        progress(total - remaining, total);
    }
  };

  void loop();
  void spawn(Worker &worker);
  void startFailed(Worker &worker, const std::string &why, bool withLog);
  void dispatch();
  void readReplies(Worker &worker);
  void handleLine(Worker &worker, const std::string &line);
  void checkExited(Worker &worker);
  void checkDeadline(Worker &worker);
  void flushOutput(Worker &worker);
  /// SIGKILL to the worker's group, reap, close its pipes. Returns the
  /// wait status.
  int terminate(Worker &worker);
  void finishRequest(Worker &worker, WorkerOutcome outcome);
  void failWorker(Worker &worker, WorkerOutcome::Status status,
                  const std::string &error, int waitStatus);
  void failQueuedIfHopeless();
  void publish();
  void shutdown();
  void wake();

  std::vector<Worker> workers;
  std::thread thread;
  int wakeRead = -1, wakeWrite = -1;
  bool ownScratchRoot = false;
  uint64_t nextRequestId = 1;
  unsigned consecutiveStartFailures = 0;
  std::set<std::string> notesSeen;

  // Shared with callers, under `mutex`.
  std::condition_variable changed;
  Batch *batch = nullptr;
  bool stopping = false;
  bool startWanted = false;
  bool gaveUp = false;
  unsigned readyWorkers = 0;
  std::mutex runMutex; ///< one run() at a time
};

WorkerPool::Supervisor::Supervisor(WorkerPoolOptions options)
    : opts(std::move(options)) {
  scratchRoot = opts.scratchRoot;
  if (scratchRoot.empty()) {
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp && *tmp ? tmp : "/tmp") + "/dice-workers-XXXXXX";
    if (mkdtemp(pattern.data())) {
      scratchRoot = pattern;
      ownScratchRoot = true;
    }
  } else {
    makeDirectories(scratchRoot, 0700);
    // Workers start in their scratch directory (the sandbox changes into it
    // before the worker runs): a relative root would name a path inside
    // itself by then.
    std::error_code ec;
    if (std::filesystem::path abs = std::filesystem::absolute(scratchRoot, ec); !ec)
      scratchRoot = abs.lexically_normal().string();
  }
  unsigned count = std::max(1u, opts.workers);
  workers.resize(count);
  for (unsigned i = 0; i < count; ++i) {
    workers[i].slot = i;
    workers[i].scratch = scratchRoot + "/worker-" + std::to_string(i);
    workers[i].logPath = workers[i].scratch + "/worker.log";
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
    wakeRead = fds[0];
    wakeWrite = fds[1];
  }
  if (scratchRoot.empty() || wakeRead < 0 || opts.argv.empty()) {
    gaveUp = true;
    startError = opts.argv.empty() ? "no worker command"
                 : scratchRoot.empty()
                     ? "cannot create a scratch directory for the workers"
                     : std::string("pipe: ") + std::strerror(errno);
  } else if (Result<SandboxSkips> skips = sandboxSkips(opts.sandbox); !skips) {
    // A misspelt measure would otherwise be applied after all, silently.
    gaveUp = true;
    startError = "the worker sandbox cannot be set up: " + skips.error().key +
                 ": " + skips.error().message;
  }
  startWanted = opts.startEagerly;
  thread = std::thread([this] { loop(); });
}

WorkerPool::Supervisor::~Supervisor() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake();
  thread.join();
  closeFd(wakeRead);
  closeFd(wakeWrite);
  if (ownScratchRoot && !opts.keepScratch)
    (void)removeTree(scratchRoot); // best effort: the pool is going away
}

void WorkerPool::Supervisor::wake() {
  if (wakeWrite >= 0) {
    char byte = 1;
    (void)!write(wakeWrite, &byte, 1);
  }
}

std::vector<WorkerOutcome>
WorkerPool::Supervisor::run(const std::vector<std::string> &requests,
                            double timeoutSeconds,
                            const std::function<void(size_t, size_t)> &progress) {
  std::lock_guard<std::mutex> serial(runMutex);
  Batch work;
  work.timeoutSeconds = timeoutSeconds;
  work.requests.resize(requests.size());
  work.outcomes.resize(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    nlohmann::json request =
        nlohmann::json::parse(requests[i], nullptr, /*allow_exceptions=*/false);
    if (!request.is_object()) {
      work.outcomes[i].error = "request " + std::to_string(i) +
                               " is not a JSON object";
      continue;
    }
    work.requests[i] = std::move(request);
    work.queue.push_back(i);
  }
  work.remaining = work.total = work.queue.size();
  work.progress = progress;
  if (work.remaining == 0)
    return std::move(work.outcomes);

  std::unique_lock<std::mutex> lock(mutex);
  batch = &work;
  startWanted = true;
  wake();
  changed.wait(lock, [&] { return work.finished; });
  batch = nullptr;
  return std::move(work.outcomes);
}

bool WorkerPool::Supervisor::waitUntilReady(double timeoutSeconds) {
  std::unique_lock<std::mutex> lock(mutex);
  startWanted = true;
  wake();
  changed.wait_for(lock, std::chrono::duration<double>(timeoutSeconds), [&] {
    return gaveUp || readyWorkers == workers.size();
  });
  return readyWorkers > 0;
}

void WorkerPool::Supervisor::loop() {
  // A write to the stdin of a worker that just died must give EPIPE, not
  // kill the caller's process.
  sigset_t pipeSignal;
  sigemptyset(&pipeSignal);
  sigaddset(&pipeSignal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipeSignal, nullptr);

  while (true) {
    bool wantWorkers;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (stopping)
        break;
      wantWorkers = startWanted && !gaveUp;
    }
    for (Worker &worker : workers)
      if (wantWorkers && worker.state == Worker::State::Down && !gaveUp)
        spawn(worker);
    dispatch();
    failQueuedIfHopeless();
    publish();

    // Sleep until a worker speaks, exits or can take input, a deadline
    // passes, or a caller wakes us.
    std::vector<pollfd> fds;
    fds.push_back({wakeRead, POLLIN, 0});
    auto next = Clock::now() + std::chrono::seconds(1);
    bool needPolling = false;
    for (Worker &worker : workers) {
      if (worker.state == Worker::State::Down)
        continue;
      if (worker.replyFd >= 0)
        fds.push_back({worker.replyFd, POLLIN, 0});
      if (worker.pidFd >= 0)
        fds.push_back({worker.pidFd, POLLIN, 0});
      else
        needPolling = true;
      if (!worker.output.empty() && worker.requestFd >= 0)
        fds.push_back({worker.requestFd, POLLOUT, 0});
      if (worker.state != Worker::State::Idle)
        next = std::min(next, worker.deadline);
      if (worker.replyClosedAt)
        next = std::min(next, *worker.replyClosedAt + kExitGrace);
    }
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
                    next - Clock::now())
                    .count() +
                1;
    // Without pidfds (kernels before 5.3) exits are noticed by polling.
    if (needPolling)
      wait = std::min<long long>(wait, 20);
    poll(fds.data(), fds.size(), int(std::max<long long>(0, wait)));

    char drain[64];
    while (read(wakeRead, drain, sizeof(drain)) > 0) {
    }
    for (Worker &worker : workers) {
      if (worker.state == Worker::State::Down)
        continue;
      flushOutput(worker);
      readReplies(worker);
      checkExited(worker);
      checkDeadline(worker);
    }
  }
  shutdown();
}

void WorkerPool::Supervisor::spawn(Worker &worker) {
  // What the last worker left, folders it took its own rights from
  // included; a slot that cannot be emptied does not start.
  if (Status removed = removeTree(worker.scratch); !removed)
    return startFailed(worker, removed.error().describe(), false);
  if (!makeDirectories(worker.scratch + "/cuda-cache", 0700))
    return startFailed(worker,
                       "cannot create " + worker.scratch + ": " +
                           std::strerror(errno),
                       false);

  std::vector<std::string> args = opts.argv;
  for (std::string &arg : args)
    if (arg == "{scratch}")
      arg = worker.scratch;
  std::vector<char *> argv;
  for (std::string &arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);

  std::vector<std::string> ours = {
      "TMPDIR=" + worker.scratch, "HOME=" + worker.scratch,
      "CUDA_CACHE_PATH=" + worker.scratch + "/cuda-cache",
      "DICE_WORKER_SCRATCH=" + worker.scratch};
  ours.insert(ours.end(), opts.environment.begin(), opts.environment.end());
  auto overridden = [&](const char *entry) {
    for (const std::string &own : ours) {
      size_t eq = own.find('=');
      if (std::strncmp(entry, own.c_str(), eq + 1) == 0)
        return true;
    }
    return false;
  };
  std::vector<std::string> env;
  for (char **entry = environ; entry && *entry; ++entry)
    if (!overridden(*entry))
      env.push_back(*entry);
  env.insert(env.end(), ours.begin(), ours.end());
  std::vector<char *> envp;
  for (std::string &entry : env)
    envp.push_back(entry.data());
  envp.push_back(nullptr);

  SandboxOptions sandboxOptions = opts.sandbox;
  sandboxOptions.scratchDir = worker.scratch;
  Sandbox sandbox(std::move(sandboxOptions));

  int request[2], reply[2], status[2];
  if (pipe2(request, O_CLOEXEC) != 0)
    return startFailed(worker, std::string("pipe: ") + std::strerror(errno),
                       false);
  if (pipe2(reply, O_CLOEXEC) != 0) {
    close(request[0]);
    close(request[1]);
    return startFailed(worker, std::string("pipe: ") + std::strerror(errno),
                       false);
  }
  if (pipe2(status, O_CLOEXEC) != 0) {
    for (int fd : {request[0], request[1], reply[0], reply[1]})
      close(fd);
    return startFailed(worker, std::string("pipe: ") + std::strerror(errno),
                       false);
  }
  // The worker's stdout and stderr. Made fresh (the scratch was just
  // emptied; O_EXCL and O_NOFOLLOW refuse whatever a worker left there);
  // the pool keeps this descriptor to read the tail from.
  closeFd(worker.logFd);
  int log =
      open(worker.logPath.c_str(),
           O_RDWR | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
  worker.logFd = log;
  pid_t supervisorPid = getpid();
  const char *scratch = worker.scratch.c_str();

  pid_t pid = log < 0 ? -1 : fork();
  if (pid == 0) {
    // The child: async-signal-safe calls only until exec.
    ChildStatus childStatus;
    auto fail = [&](ChildStep step) {
      childStatus.failedStep = step;
      childStatus.error = errno;
      (void)!write(4, &childStatus, sizeof(childStatus));
      _exit(127);
    };
    struct sigaction defaults {};
    defaults.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig)
      sigaction(sig, &defaults, nullptr);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    setsid();
    // Lift every source above the targets first, so that no dup2 below
    // overwrites a descriptor that is still to be moved.
    int in = fcntl(request[0], F_DUPFD, 10);
    int out = fcntl(reply[1], F_DUPFD, 10);
    int logFd = fcntl(log, F_DUPFD, 10);
    int statusFd = fcntl(status[1], F_DUPFD, 10);
    if (in < 0 || out < 0 || logFd < 0 || statusFd < 0 ||
        dup2(statusFd, 4) < 0 || fcntl(4, F_SETFD, FD_CLOEXEC) < 0)
      _exit(127);
    if (dup2(in, 0) < 0 || dup2(logFd, 1) < 0 || dup2(logFd, 2) < 0 ||
        dup2(out, 3) < 0)
      fail(StepDescriptors);
    if (syscall(SYS_close_range, 5u, ~0u, 0u) != 0)
      for (int fd = 5; fd < 65536; ++fd)
        close(fd);
    if (chdir(scratch) != 0)
      fail(StepDirectory);
    sandbox.applyInChild(supervisorPid, childStatus.sandbox);
    (void)!write(4, &childStatus, sizeof(childStatus));
    execve(argv[0], argv.data(), envp.data());
    fail(StepExec);
  }

  int forkError = errno;
  for (int fd : {request[0], reply[1], status[1]})
    close(fd);
  if (pid < 0) {
    for (int fd : {request[1], reply[0], status[0]})
      close(fd);
    return startFailed(worker,
                       std::string(log < 0 ? "cannot open the worker log: "
                                           : "fork: ") +
                           std::strerror(forkError),
                       false);
  }

  // Until exec the child writes its report; exec closes the pipe.
  ChildStatus childStatus;
  size_t got = 0;
  std::vector<char> buffer;
  while (true) {
    char chunk[512];
    ssize_t n = read(status[0], chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    buffer.insert(buffer.end(), chunk, chunk + n);
  }
  close(status[0]);
  got = buffer.size() / sizeof(ChildStatus);
  if (got > 0)
    std::memcpy(&childStatus,
                buffer.data() + (got - 1) * sizeof(ChildStatus),
                sizeof(ChildStatus));

  worker.pid = pid;
  worker.requestFd = request[1];
  worker.replyFd = reply[0];
  worker.pidFd = int(syscall(SYS_pidfd_open, pid, 0));
  worker.startedAt = Clock::now();
  worker.deadline =
      worker.startedAt + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(
                                 opts.startTimeoutSeconds));
  worker.state = Worker::State::Starting;
  if (worker.starts++ > 0) {
    std::lock_guard<std::mutex> lock(mutex);
    ++counters.replacements;
  }

  if (got == 0 || childStatus.failedStep != StepNone) {
    std::string why =
        got == 0 ? "the worker died while it was set up"
                 : std::string("cannot start ") + opts.argv[0] + ": " +
                       childStepName(childStatus.failedStep) + ": " +
                       std::strerror(childStatus.error);
    terminate(worker);
    return startFailed(worker, why, false);
  }
  fcntl(worker.requestFd, F_SETFL, O_NONBLOCK);
  fcntl(worker.replyFd, F_SETFL, O_NONBLOCK);

  std::lock_guard<std::mutex> lock(mutex);
  sandboxReport = childStatus.sandbox;
  for (std::string &note : childStatus.sandbox.notes())
    if (notesSeen.insert(note).second)
      sandboxNotes.push_back(note);
}

void WorkerPool::Supervisor::startFailed(Worker &worker,
                                         const std::string &why,
                                         bool withLog) {
  std::string message = why;
  if (withLog) {
    std::string tail = readLogTail(worker.logFd, 5);
    if (!tail.empty())
      message += "; worker log:\n" + tail;
  }
  if (worker.state != Worker::State::Down)
    terminate(worker);
  std::lock_guard<std::mutex> lock(mutex);
  ++counters.startFailures;
  if (++consecutiveStartFailures >= std::max(1u, opts.maxStartFailures)) {
    gaveUp = true;
    startError = "workers fail to start (" +
                 std::to_string(consecutiveStartFailures) +
                 " consecutive failures; the pool stopped starting them): " +
                 message;
  }
  changed.notify_all();
}

void WorkerPool::Supervisor::dispatch() {
  std::lock_guard<std::mutex> lock(mutex);
  if (!batch)
    return;
  for (Worker &worker : workers) {
    if (batch->queue.empty())
      break;
    if (worker.state != Worker::State::Idle)
      continue;
    size_t index = batch->queue.front();
    batch->queue.pop_front();
    nlohmann::json request = batch->requests[index];
    worker.requestId = nextRequestId++;
    request["id"] = worker.requestId;
    worker.output += request.dump() + "\n";
    worker.request = index;
    worker.state = Worker::State::Busy;
    worker.sentAt = Clock::now();
    worker.deadline =
        batch->timeoutSeconds > 0
            ? worker.sentAt + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(
                                      batch->timeoutSeconds))
            : Clock::time_point::max();
    ++counters.requests;
  }
}

void WorkerPool::Supervisor::failQueuedIfHopeless() {
  std::lock_guard<std::mutex> lock(mutex);
  if (!batch || !gaveUp || batch->queue.empty())
    return;
  for (Worker &worker : workers)
    if (worker.state == Worker::State::Idle ||
        worker.state == Worker::State::Busy)
      return;
  for (size_t index : batch->queue) {
    batch->outcomes[index].status = WorkerOutcome::Status::Error;
    batch->outcomes[index].error = startError;
    batch->finishOne();
  }
  batch->queue.clear();
}

void WorkerPool::Supervisor::publish() {
  std::lock_guard<std::mutex> lock(mutex);
  unsigned ready = 0;
  for (Worker &worker : workers)
    if (worker.state == Worker::State::Idle ||
        worker.state == Worker::State::Busy)
      ++ready;
  readyWorkers = ready;
  if (batch && batch->remaining == 0)
    batch->finished = true;
  changed.notify_all();
}

void WorkerPool::Supervisor::flushOutput(Worker &worker) {
  while (!worker.output.empty() && worker.requestFd >= 0) {
    ssize_t n = write(worker.requestFd, worker.output.data(),
                      worker.output.size());
    if (n > 0) {
      worker.output.erase(0, size_t(n));
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EPIPE) {
      // The worker closed its stdin or died; its exit is handled below.
      // Consume the SIGPIPE that is now pending on this thread.
      sigset_t pipeSignal;
      sigemptyset(&pipeSignal);
      sigaddset(&pipeSignal, SIGPIPE);
      timespec zero{0, 0};
      sigtimedwait(&pipeSignal, nullptr, &zero);
      worker.output.clear();
    }
    break;
  }
}

void WorkerPool::Supervisor::readReplies(Worker &worker) {
  while (worker.replyFd >= 0) {
    char chunk[65536];
    ssize_t n = read(worker.replyFd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return; // EAGAIN: nothing more for now
    if (n == 0) {
      // Every writer is gone: the worker exited or closed fd 3. Either way
      // it cannot answer any more; checkExited decides what it means.
      closeFd(worker.replyFd);
      return;
    }
    worker.input.append(chunk, size_t(n));
    size_t newline;
    while (worker.state != Worker::State::Down &&
           (newline = worker.input.find('\n')) != std::string::npos) {
      std::string line = worker.input.substr(0, newline);
      worker.input.erase(0, newline + 1);
      if (!line.empty() && line.back() == '\r')
        line.pop_back();
      if (!line.empty())
        handleLine(worker, line);
    }
    if (worker.state == Worker::State::Down)
      return;
    if (worker.input.size() > kMaxLineBytes) {
      std::string why = "protocol error: a line longer than " +
                        std::to_string(kMaxLineBytes >> 20) + " MiB";
      if (worker.state == Worker::State::Starting)
        return startFailed(worker, why, true);
      if (worker.state == Worker::State::Busy)
        return failWorker(worker, WorkerOutcome::Status::Error, why,
                          terminate(worker));
      terminate(worker);
      return;
    }
  }
}

void WorkerPool::Supervisor::handleLine(Worker &worker,
                                        const std::string &line) {
  nlohmann::json message =
      nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  std::string excerpt = line.size() > 200 ? line.substr(0, 200) + "..." : line;

  if (worker.state == Worker::State::Starting) {
    if (!message.is_object() || !message.contains("ready") ||
        !message["ready"].is_boolean())
      return startFailed(worker,
                         "protocol error: the first line is not a ready "
                         "object: " +
                             excerpt,
                         true);
    if (!message["ready"].get<bool>()) {
      std::string error =
          message.contains("error") && message["error"].is_string()
              ? message["error"].get<std::string>()
              : excerpt;
      return startFailed(worker, "worker not ready: " + error, true);
    }
    worker.state = Worker::State::Idle;
    std::lock_guard<std::mutex> lock(mutex);
    consecutiveStartFailures = 0;
    readyJson = line;
    return;
  }

  if (worker.state != Worker::State::Busy) {
    // Nobody asked: a worker that talks out of turn cannot be trusted to
    // pair its next reply with the right request.
    {
      std::lock_guard<std::mutex> lock(mutex);
      ++counters.protocolErrors;
    }
    terminate(worker);
    return;
  }
  bool idMatches = message.is_object() && message.contains("id") &&
                   message["id"].is_number_unsigned() &&
                   message["id"].get<uint64_t>() == worker.requestId;
  if (!idMatches)
    return failWorker(worker, WorkerOutcome::Status::Error,
                      "protocol error: the reply is not an object with id " +
                          std::to_string(worker.requestId) + ": " + excerpt,
                      terminate(worker));

  WorkerOutcome outcome;
  outcome.status = WorkerOutcome::Status::Replied;
  outcome.reply = line;
  outcome.workerExits = message.contains("exit") &&
                        message["exit"].is_boolean() &&
                        message["exit"].get<bool>();
  bool exits = outcome.workerExits;
  finishRequest(worker, std::move(outcome));
  if (!exits) {
    worker.state = Worker::State::Idle;
    return;
  }
  // Its CUDA context is poisoned: let it exit, then replace it.
  worker.state = Worker::State::Exiting;
  closeFd(worker.requestFd);
  worker.output.clear();
  worker.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(
                                           std::max(1.0, opts.shutdownGraceSeconds)));
}

void WorkerPool::Supervisor::checkExited(Worker &worker) {
  if (worker.state == Worker::State::Down)
    return;
  siginfo_t info{};
  bool exited = waitid(P_PID, worker.pid, &info,
                       WEXITED | WNOHANG | WNOWAIT) == 0 &&
                info.si_pid == worker.pid;
  if (!exited) {
    if (worker.replyFd >= 0)
      return;
    if (!worker.replyClosedAt)
      worker.replyClosedAt = Clock::now();
    if (Clock::now() < *worker.replyClosedAt + kExitGrace)
      return;
  }
  // A reply written just before the exit is still in the pipe.
  if (exited)
    readReplies(worker);
  if (worker.state == Worker::State::Down)
    return;

  std::string how = "closed its reply pipe";
  if (exited && info.si_code == CLD_EXITED)
    how = "exited with status " + std::to_string(info.si_status);
  else if (exited)
    how = "was killed by " + signalName(info.si_status);
  switch (worker.state) {
  case Worker::State::Starting:
    return startFailed(worker, "the worker " + how + " before it was ready",
                       true);
  case Worker::State::Busy:
    if (exited)
      return failWorker(worker, WorkerOutcome::Status::Crashed, "",
                        terminate(worker));
    return failWorker(worker, WorkerOutcome::Status::Error,
                      "protocol error: the worker " + how,
                      terminate(worker));
  default:
    // Idle or announced: replaced without costing a request.
    terminate(worker);
    return;
  }
}

void WorkerPool::Supervisor::checkDeadline(Worker &worker) {
  if (worker.state == Worker::State::Down ||
      worker.state == Worker::State::Idle || Clock::now() < worker.deadline)
    return;
  switch (worker.state) {
  case Worker::State::Starting: {
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%.1f s", opts.startTimeoutSeconds);
    return startFailed(worker,
                       std::string("the worker sent no ready line within ") +
                           seconds,
                       true);
  }
  case Worker::State::Busy:
    return failWorker(worker, WorkerOutcome::Status::TimedOut, "",
                      terminate(worker));
  default:
    terminate(worker);
    return;
  }
}

int WorkerPool::Supervisor::terminate(Worker &worker) {
  int status = 0;
  if (worker.pid > 0) {
    // The group holds everything the worker forked; the worker itself is
    // not reaped yet, so its pid (the group's id) cannot have been reused.
    kill(-worker.pid, SIGKILL);
    kill(worker.pid, SIGKILL);
    while (waitpid(worker.pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  closeFd(worker.pidFd);
  closeFd(worker.requestFd);
  closeFd(worker.replyFd);
  worker.replyClosedAt.reset();
  worker.input.clear();
  worker.output.clear();
  worker.state = Worker::State::Down;
  return status;
}

void WorkerPool::Supervisor::finishRequest(Worker &worker,
                                           WorkerOutcome outcome) {
  outcome.seconds = secondsSince(worker.sentAt);
  outcome.workerPid = worker.pid;
  outcome.workerSlot = worker.slot;
  std::lock_guard<std::mutex> lock(mutex);
  if (!batch)
    return;
  batch->outcomes[worker.request] = std::move(outcome);
  batch->finishOne();
}

void WorkerPool::Supervisor::failWorker(Worker &worker,
                                        WorkerOutcome::Status status,
                                        const std::string &error,
                                        int waitStatus) {
  WorkerOutcome outcome;
  outcome.status = status;
  outcome.error = error;
  if (WIFSIGNALED(waitStatus)) {
    outcome.signal = WTERMSIG(waitStatus);
    outcome.signalName = signalName(outcome.signal);
  } else if (WIFEXITED(waitStatus)) {
    outcome.exitCode = WEXITSTATUS(waitStatus);
  }
  outcome.logTail = readLogTail(worker.logFd, kLogTailLines);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (status == WorkerOutcome::Status::Crashed)
      ++counters.crashes;
    else if (status == WorkerOutcome::Status::TimedOut)
      ++counters.timeouts;
    else
      ++counters.protocolErrors;
  }
  finishRequest(worker, std::move(outcome));
}

void WorkerPool::Supervisor::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (batch) {
      for (size_t index : batch->queue)
        batch->outcomes[index].error = "the worker pool shut down";
      batch->remaining -= batch->queue.size();
      batch->queue.clear();
    }
  }
  // End of input asks a worker to exit; the grace period lets it flush.
  for (Worker &worker : workers)
    closeFd(worker.requestFd);
  auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(
                                      opts.shutdownGraceSeconds));
  while (true) {
    bool alive = false;
    for (Worker &worker : workers) {
      if (worker.state == Worker::State::Down)
        continue;
      siginfo_t info{};
      if (waitid(P_PID, worker.pid, &info, WEXITED | WNOHANG | WNOWAIT) ==
              0 &&
          info.si_pid == worker.pid) {
        if (worker.state == Worker::State::Busy)
          failWorker(worker, WorkerOutcome::Status::Error,
                     "the worker pool shut down", terminate(worker));
        else
          terminate(worker);
      } else {
        alive = true;
      }
    }
    if (!alive || Clock::now() >= until)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (Worker &worker : workers) {
    if (worker.state == Worker::State::Busy)
      failWorker(worker, WorkerOutcome::Status::Error,
                 "the worker pool shut down", terminate(worker));
    else if (worker.state != Worker::State::Down)
      terminate(worker);
    closeFd(worker.logFd);
    if (!opts.keepScratch)
      (void)removeTree(worker.scratch); // best effort; spawn() retries it
  }
  std::lock_guard<std::mutex> lock(mutex);
  if (batch)
    batch->finished = true;
  changed.notify_all();
}

//===----------------------------------------------------------------------===//
// WorkerPool
//===----------------------------------------------------------------------===//

WorkerPool::WorkerPool(WorkerPoolOptions options)
    : supervisor(std::make_unique<Supervisor>(std::move(options))) {}

WorkerPool::~WorkerPool() = default;

std::vector<WorkerOutcome>
WorkerPool::run(const std::vector<std::string> &requestJsonObjects,
                double timeoutSeconds,
                const std::function<void(size_t, size_t)> &progress) {
  return supervisor->run(requestJsonObjects, timeoutSeconds, progress);
}

bool WorkerPool::waitUntilReady(double timeoutSeconds) {
  return supervisor->waitUntilReady(timeoutSeconds);
}

std::string WorkerPool::readyJson() const {
  std::lock_guard<std::mutex> lock(supervisor->mutex);
  return supervisor->readyJson;
}

std::string WorkerPool::startError() const {
  std::lock_guard<std::mutex> lock(supervisor->mutex);
  return supervisor->startError;
}

std::optional<SandboxReport> WorkerPool::sandboxReport() const {
  std::lock_guard<std::mutex> lock(supervisor->mutex);
  return supervisor->sandboxReport;
}

std::vector<std::string> WorkerPool::sandboxNotes() const {
  std::lock_guard<std::mutex> lock(supervisor->mutex);
  return supervisor->sandboxNotes;
}

WorkerPoolCounters WorkerPool::counters() const {
  std::lock_guard<std::mutex> lock(supervisor->mutex);
  return supervisor->counters;
}

const std::string &WorkerPool::scratchRoot() const {
  return supervisor->scratchRoot;
}

} // namespace dice
