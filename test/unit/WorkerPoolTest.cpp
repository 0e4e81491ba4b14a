//===- WorkerPoolTest.cpp - sandboxed worker pool -------------------------===//
//
// Drives the pool with a test worker (TestWorker.cpp) that crashes, hangs,
// exits and probes its sandbox on request. Sandbox measures are asserted
// where this machine's kernel supports them, which each test probes
// independently of the code under test.
//
//===----------------------------------------------------------------------===//

#include "dice/Sandbox/WorkerPool.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <optional>
#include <set>
#include <thread>

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace dice;
using nlohmann::json;

namespace {

/// Sets an environment variable (or removes it, for nullptr) for a scope
/// and puts back what the tests' caller had.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name(name) {
    if (const char *old = std::getenv(name))
      saved = old;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() { saved ? setenv(name, saved->c_str(), 1) : unsetenv(name); }

private:
  const char *name;
  std::optional<std::string> saved;
};

WorkerPoolOptions testOptions(unsigned workers,
                              std::vector<std::string> extra = {}) {
  WorkerPoolOptions options;
  options.argv = {DICE_TEST_WORKER, "--scratch", "{scratch}"};
  options.argv.insert(options.argv.end(), extra.begin(), extra.end());
  options.workers = workers;
  options.startTimeoutSeconds = 30;
  return options;
}

std::string request(const std::string &action, json fields = json::object()) {
  fields["do"] = action;
  return fields.dump();
}

json replyOf(const WorkerOutcome &outcome) {
  EXPECT_TRUE(outcome.replied()) << outcome.describe() << "\n"
                                 << outcome.logTail;
  if (!outcome.replied())
    return json::object();
  return json::parse(outcome.reply);
}

WorkerOutcome runOne(WorkerPool &pool, const std::string &text,
                     double timeout = 30) {
  std::vector<WorkerOutcome> outcomes = pool.run({text}, timeout);
  EXPECT_EQ(outcomes.size(), 1u);
  return outcomes.at(0);
}

/// Gone or a zombie nobody reaped yet: either way it runs no more code.
bool processGone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat)
    return true;
  std::string text((std::istreambuf_iterator<char>(stat)),
                   std::istreambuf_iterator<char>());
  size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() &&
         (text[paren + 2] == 'Z' || text[paren + 2] == 'X');
}

bool waitGone(pid_t pid, double seconds) {
  auto until = std::chrono::steady_clock::now() +
               std::chrono::milliseconds(int(seconds * 1000));
  while (std::chrono::steady_clock::now() < until) {
    if (processGone(pid))
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return processGone(pid);
}

/// Runs `probe` in a forked child; true when it exits 0. The kernel's
/// answer, independent of Sandbox.cpp.
template <typename Probe> bool childSucceeds(Probe probe) {
  pid_t child = fork();
  if (child == 0)
    _exit(probe() ? 0 : 1);
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

struct KernelSupport {
  int landlockAbi = 0;
  bool networkNamespace = false;
  bool seccomp = false;
};

KernelSupport probeKernel() {
  KernelSupport support;
  long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0,
                     LANDLOCK_CREATE_RULESET_VERSION);
  support.landlockAbi = abi > 0 ? int(abi) : 0;
  support.networkNamespace = childSucceeds([] {
    return unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0 ||
           unshare(CLONE_NEWNET) == 0;
  });
  support.seccomp = childSucceeds([] {
    sock_filter allow = {BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW};
    sock_fprog program = {1, &allow};
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
           syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) == 0;
  });
  return support;
}

/// A pool whose one worker has started, and its sandbox report.
SandboxReport startedReport(WorkerPool &pool) {
  EXPECT_TRUE(pool.waitUntilReady(30)) << pool.startError();
  std::optional<SandboxReport> report = pool.sandboxReport();
  EXPECT_TRUE(report.has_value());
  return report.value_or(SandboxReport());
}

//===----------------------------------------------------------------------===//
// Protocol
//===----------------------------------------------------------------------===//

TEST(WorkerPool, EchoesComeBackInOrderAcrossWorkers) {
  WorkerPool pool(testOptions(3));
  ASSERT_TRUE(pool.waitUntilReady(30)) << pool.startError();
  json ready = json::parse(pool.readyJson());
  EXPECT_EQ(ready["ready"], true);
  EXPECT_EQ(ready["worker"], "test");

  std::vector<std::string> requests;
  for (int i = 0; i < 30; ++i)
    requests.push_back(request("echo", {{"payload", i}}));
  requests.push_back("[1, 2]");
  std::vector<WorkerOutcome> outcomes = pool.run(requests, 30);
  ASSERT_EQ(outcomes.size(), requests.size());
  std::set<pid_t> pids;
  std::set<uint64_t> ids;
  for (int i = 0; i < 30; ++i) {
    json reply = replyOf(outcomes[i]);
    EXPECT_EQ(reply["echo"], i);
    EXPECT_EQ(reply["pid"], outcomes[i].workerPid);
    ids.insert(reply["id"].get<uint64_t>());
    pids.insert(outcomes[i].workerPid);
  }
  // All three were idle when the batch came, so each got a request.
  EXPECT_EQ(pids.size(), 3u);
  EXPECT_EQ(ids.size(), 30u);
  EXPECT_EQ(outcomes.back().status, WorkerOutcome::Status::Error);
  EXPECT_NE(outcomes.back().error.find("not a JSON object"), std::string::npos);
  WorkerPoolCounters counters = pool.counters();
  EXPECT_EQ(counters.requests, 30u);
  EXPECT_EQ(counters.crashes, 0u);
  EXPECT_EQ(counters.replacements, 0u);
}

struct CrashCase {
  const char *action;
  int signal;   // expected signal, 0 for an exit
  int exitCode; // expected exit code when no signal
};

class WorkerCrash : public ::testing::TestWithParam<CrashCase> {};

TEST_P(WorkerCrash, IsReportedAndTheNextRequestGetsANewWorker) {
  const CrashCase &crash = GetParam();
  WorkerPool pool(testOptions(1));
  WorkerOutcome first = runOne(pool, request("echo"));
  ASSERT_TRUE(first.replied()) << first.describe();

  WorkerOutcome crashed = runOne(pool, request(crash.action));
  EXPECT_EQ(crashed.status, WorkerOutcome::Status::Crashed)
      << crashed.describe();
  EXPECT_EQ(crashed.workerPid, first.workerPid);
  EXPECT_EQ(crashed.signal, crash.signal);
  if (crash.signal)
    EXPECT_EQ(crashed.signalName, sigabbrev_np(crash.signal)
                                      ? std::string("SIG") +
                                            sigabbrev_np(crash.signal)
                                      : "");
  else
    EXPECT_EQ(crashed.exitCode, crash.exitCode);
  // The log tail shows what the worker was doing.
  EXPECT_NE(crashed.logTail.find(std::string(": ") + crash.action),
            std::string::npos)
      << crashed.logTail;

  WorkerOutcome next = runOne(pool, request("echo", {{"payload", "after"}}));
  EXPECT_EQ(replyOf(next)["echo"], "after");
  EXPECT_NE(next.workerPid, first.workerPid);
  WorkerPoolCounters counters = pool.counters();
  EXPECT_EQ(counters.crashes, 1u);
  EXPECT_EQ(counters.replacements, 1u);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, WorkerCrash,
    ::testing::Values(CrashCase{"segfault", SIGSEGV, 0},
                      CrashCase{"abort", SIGABRT, 0},
                      CrashCase{"exit", 0, 3}),
    [](const ::testing::TestParamInfo<CrashCase> &info) {
      return std::string(info.param.action);
    });

TEST(WorkerPool, HangIsKilledAtTheTimeout) {
  WorkerPool pool(testOptions(1));
  WorkerOutcome first = runOne(pool, request("echo"));
  ASSERT_TRUE(first.replied());
  WorkerOutcome hung = runOne(pool, request("hang"), 1.0);
  EXPECT_EQ(hung.status, WorkerOutcome::Status::TimedOut) << hung.describe();
  EXPECT_EQ(hung.signalName, "SIGKILL");
  EXPECT_GE(hung.seconds, 1.0);
  EXPECT_LT(hung.seconds, 60.0);
  EXPECT_NE(hung.logTail.find(": hang"), std::string::npos) << hung.logTail;
  WorkerOutcome next = runOne(pool, request("echo"));
  EXPECT_TRUE(next.replied()) << next.describe();
  EXPECT_NE(next.workerPid, first.workerPid);
  EXPECT_EQ(pool.counters().timeouts, 1u);
}

TEST(WorkerPool, WatchdogKillsGrandchildren) {
  WorkerPool pool(testOptions(1));
  WorkerOutcome hung = runOne(pool, request("fork-sleeper-hang"), 1.0);
  ASSERT_EQ(hung.status, WorkerOutcome::Status::TimedOut) << hung.describe();
  size_t at = hung.logTail.find("sleeper ");
  ASSERT_NE(at, std::string::npos) << hung.logTail;
  pid_t sleeper = std::atoi(hung.logTail.c_str() + at + 8);
  ASSERT_GT(sleeper, 0);
  EXPECT_TRUE(waitGone(sleeper, 20)) << "sleeper " << sleeper << " survived";
}

TEST(WorkerPool, MixedBatchKeepsOrderAndGoesOn) {
  WorkerPool pool(testOptions(2));
  std::vector<std::string> requests = {
      request("echo", {{"payload", 0}}), request("segfault"),
      request("echo", {{"payload", 2}}), request("hang"),
      request("echo", {{"payload", 4}}), request("exit-after-reply"),
      request("echo", {{"payload", 6}}), request("abort"),
      request("echo", {{"payload", 8}})};
  std::vector<WorkerOutcome> outcomes = pool.run(requests, 2.0);
  ASSERT_EQ(outcomes.size(), requests.size());
  for (int i : {0, 2, 4, 6, 8})
    EXPECT_EQ(replyOf(outcomes[i])["echo"], i);
  EXPECT_EQ(outcomes[1].signalName, "SIGSEGV") << outcomes[1].describe();
  EXPECT_EQ(outcomes[3].status, WorkerOutcome::Status::TimedOut);
  EXPECT_TRUE(outcomes[5].workerExits);
  EXPECT_EQ(outcomes[7].signalName, "SIGABRT") << outcomes[7].describe();
  WorkerPoolCounters counters = pool.counters();
  EXPECT_EQ(counters.requests, 9u);
  EXPECT_EQ(counters.crashes, 2u);
  EXPECT_EQ(counters.timeouts, 1u);
}

TEST(WorkerPool, ProgressCountsEveryFinishedRequest) {
  WorkerPool pool(testOptions(2));
  // Crashes and malformed requests finish too; the malformed one never
  // reaches a worker, so it is not counted.
  std::vector<std::string> requests = {
      request("echo", {{"payload", 0}}), request("segfault"),
      request("echo", {{"payload", 2}}), "[1, 2]"};
  std::vector<std::pair<size_t, size_t>> calls;
  pool.run(requests, 10, [&](size_t done, size_t total) {
    calls.push_back({done, total});
  });
  std::vector<std::pair<size_t, size_t>> expected = {{1, 3}, {2, 3}, {3, 3}};
  EXPECT_EQ(calls, expected);
}

TEST(WorkerPool, ExitReplyReplacesTheWorker) {
  WorkerPool pool(testOptions(1));
  WorkerOutcome last = runOne(pool, request("exit-after-reply"));
  ASSERT_TRUE(last.replied()) << last.describe();
  EXPECT_TRUE(last.workerExits);
  WorkerOutcome next = runOne(pool, request("echo"));
  EXPECT_TRUE(next.replied()) << next.describe();
  EXPECT_NE(next.workerPid, last.workerPid);
  EXPECT_TRUE(waitGone(last.workerPid, 10));
  WorkerPoolCounters counters = pool.counters();
  EXPECT_EQ(counters.crashes, 0u);
  EXPECT_EQ(counters.replacements, 1u);
}

TEST(WorkerPool, ProtocolViolationsReplaceTheWorker) {
  WorkerPool pool(testOptions(1));
  for (const char *action : {"garbage", "wrong-id"}) {
    WorkerOutcome bad = runOne(pool, request(action));
    EXPECT_EQ(bad.status, WorkerOutcome::Status::Error) << action;
    EXPECT_NE(bad.error.find("protocol error"), std::string::npos) << bad.error;
    WorkerOutcome next = runOne(pool, request("echo"));
    EXPECT_TRUE(next.replied()) << next.describe();
    EXPECT_NE(next.workerPid, bad.workerPid);
  }
  EXPECT_EQ(pool.counters().protocolErrors, 2u);
}

TEST(WorkerPool, LoudWorkerDoesNotBlockAndTheTailStaysShort) {
  WorkerPool pool(testOptions(1));
  WorkerOutcome loud = runOne(pool, request("spam", {{"bytes", 8 << 20}}));
  ASSERT_TRUE(loud.replied()) << loud.describe();
  struct stat st;
  ASSERT_EQ(stat((pool.scratchRoot() + "/worker-0/worker.log").c_str(), &st),
            0);
  EXPECT_GE(st.st_size, 8 << 20);
  WorkerOutcome crashed = runOne(pool, request("segfault"));
  ASSERT_EQ(crashed.status, WorkerOutcome::Status::Crashed);
  size_t lines = std::count(crashed.logTail.begin(), crashed.logTail.end(), '\n');
  EXPECT_GT(lines, 0u);
  EXPECT_LE(lines, 20u);
}

// A worker may replace its log before it dies: by a FIFO (an open by path
// would wait for a writer for ever), a link to /dev/zero (a read would never
// end) or a directory (a stream read throws). The pool reads the tail
// through its own descriptor, so the crash is reported with the worker's
// real last lines.
class ReplacedLog : public ::testing::TestWithParam<const char *> {};

TEST_P(ReplacedLog, TheCrashIsReportedWithTheRealTail) {
  WorkerPool pool(testOptions(1));
  WorkerOutcome first = runOne(pool, request("echo"));
  ASSERT_TRUE(first.replied()) << first.describe();
  std::string by = GetParam();
  std::future<WorkerOutcome> pending = std::async(std::launch::async, [&] {
    return runOne(pool, request("replace-log", {{"by", by}}));
  });
  if (pending.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    ADD_FAILURE() << "the pool is stuck on the log the worker replaced";
    // A writer that comes and goes releases a reader stuck on the FIFO, so
    // that the test ends.
    int fd = open((pool.scratchRoot() + "/worker-0/worker.log").c_str(),
                  O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0)
      close(fd);
  }
  WorkerOutcome crashed = pending.get();
  EXPECT_EQ(crashed.status, WorkerOutcome::Status::Crashed)
      << crashed.describe();
  EXPECT_EQ(crashed.signalName, "SIGABRT") << crashed.describe();
  EXPECT_NE(crashed.logTail.find("replaced worker.log by " + by + ": done"),
            std::string::npos)
      << crashed.logTail;

  WorkerOutcome next = runOne(pool, request("echo"));
  EXPECT_TRUE(next.replied()) << next.describe();
  EXPECT_NE(next.workerPid, first.workerPid);
}

INSTANTIATE_TEST_SUITE_P(
    By, ReplacedLog, ::testing::Values("fifo", "dev-zero", "directory"),
    [](const ::testing::TestParamInfo<const char *> &info) {
      std::string name = info.param;
      name.erase(std::remove(name.begin(), name.end(), '-'), name.end());
      return name;
    });

//===----------------------------------------------------------------------===//
// Start failures
//===----------------------------------------------------------------------===//

TEST(WorkerPool, StopsRespawningAfterConsecutiveStartFailures) {
  struct Case {
    std::vector<std::string> extra;
    std::string argv0;
    std::string expected;
  } cases[] = {
      {{"--not-ready"}, "", "worker not ready: no device in this test"},
      {{"--die-at-start"}, "", "exited with status 7"},
      {{}, "/nonexistent/dice-worker", "exec: No such file or directory"},
  };
  for (const Case &c : cases) {
    WorkerPoolOptions options = testOptions(2, c.extra);
    if (!c.argv0.empty())
      options.argv[0] = c.argv0;
    WorkerPool pool(options);
    std::vector<WorkerOutcome> outcomes =
        pool.run({request("echo"), request("echo")}, 10);
    for (const WorkerOutcome &outcome : outcomes) {
      EXPECT_EQ(outcome.status, WorkerOutcome::Status::Error);
      EXPECT_NE(outcome.error.find(c.expected), std::string::npos)
          << outcome.error;
      EXPECT_NE(outcome.error.find("stopped starting"), std::string::npos)
          << outcome.error;
    }
    // The third failure stops new starts; the other slot's worker may
    // already be starting then, and fail too.
    EXPECT_GE(pool.counters().startFailures, 3u) << c.expected;
    EXPECT_LE(pool.counters().startFailures, 4u) << c.expected;
    EXPECT_EQ(pool.counters().requests, 0u);
    EXPECT_NE(pool.startError().find(c.expected), std::string::npos);
    EXPECT_FALSE(pool.waitUntilReady(1));
  }
}

TEST(WorkerPool, SilentWorkerFailsAtTheStartTimeout) {
  WorkerPoolOptions options = testOptions(1, {"--silent"});
  options.startTimeoutSeconds = 0.5;
  options.maxStartFailures = 1;
  WorkerPool pool(options);
  WorkerOutcome outcome = runOne(pool, request("echo"));
  EXPECT_EQ(outcome.status, WorkerOutcome::Status::Error);
  EXPECT_NE(outcome.error.find("no ready line within 0.5 s"), std::string::npos)
      << outcome.error;
}

//===----------------------------------------------------------------------===//
// Sandbox
//===----------------------------------------------------------------------===//

TEST(WorkerSandbox, AppliesWhatTheKernelAllows) {
  KernelSupport kernel = probeKernel();
  WorkerPool pool(testOptions(1));
  SandboxReport report = startedReport(pool);
  std::cout << report.describe() << "\n";
  for (const std::string &note : pool.sandboxNotes())
    std::cout << "note: " << note << "\n";

  EXPECT_TRUE(report.applied(SandboxMeasure::NoNewPrivileges));
  EXPECT_TRUE(report.applied(SandboxMeasure::ParentDeathSignal));
  EXPECT_TRUE(report.applied(SandboxMeasure::ResourceLimits));
  EXPECT_EQ(report.applied(SandboxMeasure::NetworkNamespace),
            kernel.networkNamespace);
  EXPECT_EQ(report.applied(SandboxMeasure::SyscallFilter), kernel.seccomp);
  EXPECT_EQ(report.landlockAbi, kernel.landlockAbi);
  EXPECT_EQ(report.applied(SandboxMeasure::FilesystemWrites),
            kernel.landlockAbi >= 1);
  EXPECT_EQ(report.applied(SandboxMeasure::TcpRules), kernel.landlockAbi >= 4);
  EXPECT_EQ(report.applied(SandboxMeasure::SignalScope),
            kernel.landlockAbi >= 6);

  // Every measure not applied is a note, once, however many workers start.
  unsigned missing = 0;
  for (unsigned i = 0; i < kSandboxMeasureCount; ++i)
    missing += !report.applied(SandboxMeasure(i));
  runOne(pool, request("segfault"));
  runOne(pool, request("echo"));
  EXPECT_EQ(pool.sandboxNotes().size(), missing);
}

TEST(WorkerSandbox, EachMeasureCanBeLeftOutAlone) {
  ScopedEnv noSiteSkips("DICE_SANDBOX_SKIP", nullptr);
  rlimit callerFileSize{};
  getrlimit(RLIMIT_FSIZE, &callerFileSize);
  for (unsigned i = 0; i < kSandboxMeasureCount; ++i) {
    std::string name = sandboxMeasureName(SandboxMeasure(i));
    WorkerPoolOptions options = testOptions(1);
    options.sandbox.skip = name;
    WorkerPool pool(options);
    SandboxReport report = startedReport(pool);
    for (unsigned j = 0; j < kSandboxMeasureCount; ++j) {
      if (j == i)
        EXPECT_EQ(report.state[j], SandboxReport::NotAttempted)
            << name << ": " << report.describe();
      else
        EXPECT_NE(report.state[j], SandboxReport::NotAttempted)
            << "leaving out " << name << " left out "
            << sandboxMeasureName(SandboxMeasure(j)) << " too";
    }
    std::vector<std::string> notes = pool.sandboxNotes();
    EXPECT_TRUE(std::any_of(notes.begin(), notes.end(),
                            [&](const std::string &note) {
                              return note.rfind(name + " not applied: disabled",
                                                0) == 0;
                            }))
        << name;
    if (SandboxMeasure(i) == SandboxMeasure::ResourceLimits) {
      json process = replyOf(runOne(pool, request("process")))["process"];
      EXPECT_EQ(process["fsize"], uint64_t(callerFileSize.rlim_cur));
    }
  }
}

TEST(WorkerSandbox, SkipListIgnoresBlanksAndEmptyEntries) {
  WorkerPoolOptions options = testOptions(1);
  options.sandbox.skip = " network-namespace , ,seccomp-filter,";
  WorkerPool pool(options);
  SandboxReport report = startedReport(pool);
  for (unsigned i = 0; i < kSandboxMeasureCount; ++i) {
    SandboxMeasure measure = SandboxMeasure(i);
    bool skipped = measure == SandboxMeasure::NetworkNamespace ||
                   measure == SandboxMeasure::SyscallFilter;
    EXPECT_EQ(report.state[i] == SandboxReport::NotAttempted, skipped)
        << sandboxMeasureName(measure) << ": " << report.describe();
  }
}

// A misspelt measure would leave the sandbox as it is while the site
// believes it relaxed (or, with a list meant to be empty, tightened) it.
TEST(WorkerSandbox, UnknownMeasureInASkipListStartsNoWorker) {
  struct Case {
    const char *skip, *environment, *source, *unknown;
  } cases[] = {
      {"network-namespce", nullptr, "SandboxOptions::skip", "network-namespce"},
      {"", "seccomp-filter,landlock", "DICE_SANDBOX_SKIP", "landlock"},
  };
  for (const Case &c : cases) {
    ScopedEnv skips("DICE_SANDBOX_SKIP", c.environment);
    {
      WorkerPoolOptions options = testOptions(1);
      options.sandbox.skip = c.skip;
      WorkerPool pool(options);
      WorkerOutcome outcome = runOne(pool, request("echo"), 10);
      EXPECT_EQ(outcome.status, WorkerOutcome::Status::Error);
      for (const std::string &error : {outcome.error, pool.startError()}) {
        EXPECT_NE(error.find(c.source), std::string::npos) << error;
        EXPECT_NE(error.find(std::string("'") + c.unknown + "'"),
                  std::string::npos)
            << error;
        for (unsigned i = 0; i < kSandboxMeasureCount; ++i)
          EXPECT_NE(error.find(sandboxMeasureName(SandboxMeasure(i))),
                    std::string::npos)
              << error;
      }
      EXPECT_FALSE(pool.waitUntilReady(1));
      EXPECT_EQ(pool.counters().requests, 0u);
      EXPECT_FALSE(pool.sandboxReport().has_value());
    }
  }
}

TEST(WorkerSandbox, NoNetwork) {
  KernelSupport kernel = probeKernel();
  if (!kernel.networkNamespace && !kernel.seccomp && kernel.landlockAbi < 4)
    GTEST_SKIP() << "this kernel allows no network measure";

  // A listener the worker would reach if it had the host's network.
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr *>(&address),
                 sizeof(address)),
            0);
  ASSERT_EQ(listen(listener, 4), 0);
  socklen_t length = sizeof(address);
  getsockname(listener, reinterpret_cast<sockaddr *>(&address), &length);
  int port = ntohs(address.sin_port);

  WorkerPool pool(testOptions(1));
  SandboxReport report = startedReport(pool);
  bool anyApplied = false;
  for (unsigned i = 0; i < kSandboxMeasureCount; ++i)
    anyApplied |= isNetworkMeasure(SandboxMeasure(i)) &&
                  report.applied(SandboxMeasure(i));
  ASSERT_TRUE(anyApplied) << report.describe();

  json network = replyOf(runOne(pool, request("network", {{"port", port}})))
      ["network"];
  std::cout << "worker network probe: " << network.dump() << "\n";
  EXPECT_EQ(network["connected"], false);
  EXPECT_NE(network["connect"], 0);
  EXPECT_LT(accept(listener, nullptr, nullptr), 0) << "the worker got through";
  close(listener);
  if (report.applied(SandboxMeasure::SyscallFilter)) {
    EXPECT_EQ(network["socket_inet"], EACCES);
    EXPECT_EQ(network["socket_inet6"], EACCES);
    EXPECT_EQ(network["socket_packet"], EACCES);
    // Drivers talk to their daemons through AF_UNIX.
    EXPECT_EQ(network["socket_unix"], 0);
  }
}

TEST(WorkerSandbox, WritesOnlyBeneathScratch) {
  KernelSupport kernel = probeKernel();
  if (kernel.landlockAbi < 1)
    GTEST_SKIP() << "this kernel has no Landlock";

  WorkerPool pool(testOptions(1));
  SandboxReport report = startedReport(pool);
  ASSERT_TRUE(report.applied(SandboxMeasure::FilesystemWrites))
      << report.describe();

  char outsideDir[] = "/tmp/dice-sandbox-test-XXXXXX";
  ASSERT_NE(mkdtemp(outsideDir), nullptr);
  std::string existing = std::string(outsideDir) + "/existing.txt";
  std::ofstream(existing) << "keep\n";
  std::string outside = std::string(outsideDir) + "/created.txt";
  // A device node outside the GPU's that this process may write: root could
  // write a raw disk this way.
  json fields = {{"outside", outside}, {"existing", existing}};
  std::string device;
  for (const char *candidate : {"/dev/loop0", "/dev/kmsg", "/dev/ptmx"}) {
    int fd = open(candidate, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd >= 0) {
      close(fd);
      fields["device"] = device = candidate;
      break;
    }
  }
  json writes = replyOf(runOne(pool, request("write", fields)))["write"];
  std::cout << "worker write probe: " << writes.dump() << "\n";
  EXPECT_EQ(writes["create_outside"], EACCES);
  EXPECT_EQ(writes["write_existing"], EACCES);
  EXPECT_EQ(writes["unlink_existing"], EACCES);
  EXPECT_EQ(writes["mkdir_outside"], EACCES);
  if (report.landlockAbi >= 3) {
    EXPECT_EQ(writes["truncate_existing"], EACCES);
  }
  EXPECT_EQ(writes["create_inside"], 0);
  EXPECT_EQ(writes["write_inside"], 0);
  EXPECT_EQ(writes["write_dev_null"], 0);
  if (!device.empty()) {
    EXPECT_EQ(writes["write_device"], EACCES) << device;
  }

  struct stat st;
  EXPECT_NE(stat(outside.c_str(), &st), 0);
  std::ifstream kept(existing);
  std::string content((std::istreambuf_iterator<char>(kept)),
                      std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "keep\n");
  unlink(existing.c_str());
  unlink(outside.c_str());
  rmdir((outside + ".d").c_str());
  rmdir(outsideDir);
}

TEST(WorkerSandbox, NoSignalsOutAndNoEscapeFromTheGroup) {
  WorkerPool pool(testOptions(1));
  SandboxReport report = startedReport(pool);
  if (!report.applied(SandboxMeasure::SignalScope) &&
      !report.applied(SandboxMeasure::SyscallFilter))
    GTEST_SKIP() << report.describe();
  if (report.applied(SandboxMeasure::SignalScope)) {
    json reply = replyOf(runOne(pool, request("signal", {{"pid", getpid()}})));
    EXPECT_EQ(reply["signal"], EPERM) << "the worker may signal its supervisor";
  }
  if (report.applied(SandboxMeasure::SyscallFilter)) {
    json reply = replyOf(runOne(pool, request("setsid")));
    EXPECT_EQ(reply["setsid"], EPERM);
  }
}

TEST(WorkerSandbox, DescriptorsLimitsAndEnvironment) {
  // A descriptor the caller forgot to mark close-on-exec.
  int leaked = open("/dev/null", O_RDONLY);
  ASSERT_GE(leaked, 0);
  WorkerPool pool(testOptions(1));
  SandboxReport report = startedReport(pool);
  json process = replyOf(runOne(pool, request("process")))["process"];
  close(leaked);
  std::cout << "worker process probe: " << process.dump() << "\n";

  EXPECT_EQ(process["fds"], json::array({0, 1, 2, 3}));
  std::string scratch = process["scratch_arg"];
  EXPECT_EQ(scratch, pool.scratchRoot() + "/worker-0");
  EXPECT_EQ(process["TMPDIR"], scratch);
  EXPECT_EQ(process["HOME"], scratch);
  EXPECT_EQ(process["DICE_WORKER_SCRATCH"], scratch);
  EXPECT_EQ(process["CUDA_CACHE_PATH"], scratch + "/cuda-cache");
  EXPECT_EQ(process["cwd"], scratch);
  EXPECT_EQ(process["uid"], getuid());
  EXPECT_EQ(process["sid_is_pid"], true);
  if (report.applied(SandboxMeasure::ResourceLimits)) {
    EXPECT_EQ(process["core"], 0);
    EXPECT_EQ(process["fsize"], uint64_t(1) << 30);
    EXPECT_EQ(process["nofile"], 1024);
  }
}

// A scratch root given relative to the caller's directory still works: the
// workers, which start inside their scratch directory, get absolute paths.
TEST(WorkerPool, RelativeScratchRootIsMadeAbsolute) {
  char root[] = "/tmp/dice-pool-relative-XXXXXX";
  ASSERT_NE(mkdtemp(root), nullptr);
  char *was = getcwd(nullptr, 0);
  ASSERT_EQ(chdir(root), 0);
  {
    WorkerPoolOptions options = testOptions(1);
    options.scratchRoot = "runs/../runs/scratch";
    WorkerPool pool(options);
    EXPECT_EQ(pool.scratchRoot(), std::string(root) + "/runs/scratch");
    json process = replyOf(runOne(pool, request("process")))["process"];
    EXPECT_EQ(process["cwd"], std::string(root) + "/runs/scratch/worker-0");
  }
  ASSERT_EQ(chdir(was), 0);
  free(was);
  std::system((std::string("rm -rf ") + root).c_str());
}

TEST(WorkerSandbox, WorkerDiesWithThePool) {
  char root[] = "/tmp/dice-pool-death-XXXXXX";
  ASSERT_NE(mkdtemp(root), nullptr);
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  pid_t owner = fork();
  if (owner == 0) {
    close(report[0]);
    WorkerPoolOptions options = testOptions(1);
    options.scratchRoot = root;
    WorkerPool pool(options);
    WorkerOutcome outcome = runOne(pool, request("hold"));
    pid_t worker = outcome.replied() ? outcome.workerPid : 0;
    (void)!write(report[1], &worker, sizeof(worker));
    for (;;)
      pause();
  }
  close(report[1]);
  pid_t worker = 0;
  ASSERT_EQ(read(report[0], &worker, sizeof(worker)), ssize_t(sizeof(worker)));
  close(report[0]);
  ASSERT_GT(worker, 0);
  EXPECT_FALSE(processGone(worker));
  kill(owner, SIGKILL);
  waitpid(owner, nullptr, 0);
  // The worker no longer reads its stdin, so only the death signal ends it.
  EXPECT_TRUE(waitGone(worker, 20)) << "worker " << worker
                                    << " outlived its pool";
  kill(worker, SIGKILL);
  std::system((std::string("rm -rf ") + root).c_str());
}

} // namespace
