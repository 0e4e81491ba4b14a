//===- Sandbox.cpp - confinement of a worker process ----------------------===//
//
// Everything reachable from applyInChild runs in a forked child of a
// multithreaded process: system calls on prepared buffers only, no
// allocation, no locks, no stdio.
//
//===----------------------------------------------------------------------===//

#include "dice/Sandbox/Sandbox.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <glob.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

// The system headers may predate the kernel: the Landlock rights and fields
// added after ABI 1 are spelled out here (values from the kernel's uapi).
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

namespace dice {

namespace {

/// `struct landlock_ruleset_attr` of ABI 6; older kernels get a prefix of it.
struct RulesetAttr {
  uint64_t handledAccessFs;
  uint64_t handledAccessNet; // ABI 4
  uint64_t scoped;           // ABI 6
};

#if defined(__x86_64__)
constexpr uint32_t kNativeAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kNativeAuditArch = AUDIT_ARCH_AARCH64;
#else
constexpr uint32_t kNativeAuditArch = 0; // no filter on other architectures
#endif

sock_filter statement(uint16_t code, uint32_t k) {
  return sock_filter{code, 0, 0, k};
}
sock_filter jump(uint16_t code, uint32_t k, uint8_t ifTrue, uint8_t ifFalse) {
  return sock_filter{code, ifTrue, ifFalse, k};
}

/// The seccomp program. Sockets: only AF_UNIX (drivers talk to daemons
/// through it) and AF_NETLINK (interface queries) are allowed, every family
/// that reaches another host fails with EACCES. io_uring fails because its
/// operations bypass the socket check. setsid/setpgid fail so that no
/// descendant leaves the process group the watchdog kills. Syscalls of a
/// foreign ABI (i386 int 0x80, x32) fail, since the numbers checked are the
/// native ones.
std::vector<sock_filter> buildSyscallFilter() {
  std::vector<sock_filter> f;
  if (kNativeAuditArch == 0)
    return f;
  const uint32_t deny = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
  const uint32_t denySocket = SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA);
  f.push_back(statement(BPF_LD | BPF_W | BPF_ABS,
                        offsetof(struct seccomp_data, arch)));
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, kNativeAuditArch, 1, 0));
  f.push_back(statement(BPF_RET | BPF_K, deny));
  f.push_back(
      statement(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
#if defined(__x86_64__)
  f.push_back(jump(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u /*x32*/, 0, 1));
  f.push_back(statement(BPF_RET | BPF_K, deny));
#endif
  // socket(family, ...): the family is the low word of args[0] (both
  // supported architectures are little-endian).
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 5));
  f.push_back(statement(BPF_LD | BPF_W | BPF_ABS,
                        offsetof(struct seccomp_data, args[0])));
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 2, 0));
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, AF_NETLINK, 1, 0));
  f.push_back(statement(BPF_RET | BPF_K, denySocket));
  f.push_back(statement(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  for (uint32_t nr : {uint32_t(__NR_io_uring_setup), uint32_t(__NR_setsid),
                      uint32_t(__NR_setpgid)}) {
    f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1));
    f.push_back(statement(BPF_RET | BPF_K, deny));
  }
  f.push_back(statement(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  return f;
}

void record(SandboxReport &report, SandboxMeasure measure, int8_t state,
            int error = 0) {
  report.state[unsigned(measure)] = state;
  report.error[unsigned(measure)] = error;
}

/// write(2) of a whole prepared string to a /proc file; false on failure.
bool writeProcFile(const char *path, const char *text, size_t size) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  bool ok = write(fd, text, size) == ssize_t(size);
  close(fd);
  return ok;
}

void applyResourceLimits(const SandboxOptions &opts, SandboxReport &report) {
  struct Limit {
    int resource;
    uint64_t value;
  } limits[] = {{RLIMIT_CORE, 0},
                {RLIMIT_FSIZE, opts.maxFileBytes},
                {RLIMIT_NOFILE, opts.maxOpenFiles},
                {RLIMIT_CPU, opts.cpuSeconds}};
  for (const Limit &limit : limits) {
    rlimit current{};
    if (getrlimit(limit.resource, &current) != 0) {
      record(report, SandboxMeasure::ResourceLimits, SandboxReport::Failed,
             errno);
      return;
    }
    // Never raise: a hard limit already lower than ours stays.
    rlim_t value = limit.value;
    if (current.rlim_max != RLIM_INFINITY && current.rlim_max < value)
      value = current.rlim_max;
    rlimit wanted{value, value};
    if (setrlimit(limit.resource, &wanted) != 0) {
      record(report, SandboxMeasure::ResourceLimits, SandboxReport::Failed,
             errno);
      return;
    }
  }
  record(report, SandboxMeasure::ResourceLimits, SandboxReport::Applied);
}

/// The measures one skip list names (see sandboxSkips).
Result<SandboxSkips> parseSkipList(std::string_view list,
                                   std::string_view source) {
  SandboxSkips skips = {};
  for (size_t at = 0; at <= list.size();) {
    size_t end = std::min(list.find(',', at), list.size());
    std::string_view name = list.substr(at, end - at);
    at = end + 1;
    while (!name.empty() &&
           std::isspace(static_cast<unsigned char>(name.front())))
      name.remove_prefix(1);
    while (!name.empty() &&
           std::isspace(static_cast<unsigned char>(name.back())))
      name.remove_suffix(1);
    if (name.empty())
      continue;
    bool known = false;
    for (unsigned i = 0; i < kSandboxMeasureCount; ++i)
      if (name == sandboxMeasureName(SandboxMeasure(i)))
        known = skips[i] = true;
    if (known)
      continue;
    std::string valid;
    for (unsigned i = 0; i < kSandboxMeasureCount; ++i)
      valid +=
          std::string(i ? ", " : "") + sandboxMeasureName(SandboxMeasure(i));
    return Error("", 0, 0, std::string(source),
                 "unknown sandbox measure '" + std::string(name) +
                     "' (the measures are " + valid + ")");
  }
  return skips;
}

} // namespace

const char *sandboxMeasureName(SandboxMeasure measure) {
  switch (measure) {
  case SandboxMeasure::NoNewPrivileges:
    return "no-new-privileges";
  case SandboxMeasure::ResourceLimits:
    return "resource-limits";
  case SandboxMeasure::NetworkNamespace:
    return "network-namespace";
  case SandboxMeasure::ParentDeathSignal:
    return "parent-death-signal";
  case SandboxMeasure::FilesystemWrites:
    return "landlock-writes";
  case SandboxMeasure::TcpRules:
    return "landlock-tcp";
  case SandboxMeasure::SignalScope:
    return "landlock-signals";
  case SandboxMeasure::SyscallFilter:
    return "seccomp-filter";
  }
  return "unknown";
}

bool isNetworkMeasure(SandboxMeasure measure) {
  return measure == SandboxMeasure::NetworkNamespace ||
         measure == SandboxMeasure::TcpRules ||
         measure == SandboxMeasure::SyscallFilter;
}

Result<SandboxSkips> sandboxSkips(const SandboxOptions &options) {
  Result<SandboxSkips> skips =
      parseSkipList(options.skip, "SandboxOptions::skip");
  if (!skips)
    return skips;
  if (const char *env = std::getenv("DICE_SANDBOX_SKIP"); env && *env) {
    Result<SandboxSkips> fromEnv = parseSkipList(env, "DICE_SANDBOX_SKIP");
    if (!fromEnv)
      return fromEnv;
    for (unsigned i = 0; i < kSandboxMeasureCount; ++i)
      (*skips)[i] = (*skips)[i] || (*fromEnv)[i];
  }
  return skips;
}

std::vector<std::string> SandboxReport::notes() const {
  static const char *const calls[kSandboxMeasureCount] = {
      "prctl(PR_SET_NO_NEW_PRIVS)",
      "setrlimit",
      "unshare(CLONE_NEWUSER|CLONE_NEWNET)",
      "prctl(PR_SET_PDEATHSIG)",
      "landlock",
      "landlock",
      "landlock",
      "seccomp(SECCOMP_SET_MODE_FILTER)"};
  std::vector<std::string> notes;
  for (unsigned i = 0; i < kSandboxMeasureCount; ++i) {
    std::string name = sandboxMeasureName(SandboxMeasure(i));
    std::string why = std::string(calls[i]) + ": " + std::strerror(error[i]);
    switch (state[i]) {
    case Applied:
      continue;
    case NotAttempted:
      notes.push_back(name + " not applied: disabled (SandboxOptions or "
                                 "DICE_SANDBOX_SKIP)");
      break;
    case Failed:
      notes.push_back(name + " not applied: " + why);
      break;
    case Unsupported:
      if (SandboxMeasure(i) == SandboxMeasure::TcpRules && landlockAbi > 0)
        why = "Landlock ABI " + std::to_string(landlockAbi) +
              " has no TCP rules (ABI 4)";
      else if (SandboxMeasure(i) == SandboxMeasure::SignalScope &&
               landlockAbi > 0)
        why = "Landlock ABI " + std::to_string(landlockAbi) +
              " has no signal scope (ABI 6)";
      else if (SandboxMeasure(i) == SandboxMeasure::SyscallFilter &&
               error[i] == 0)
        why = "no seccomp program for this architecture";
      else
        why = "kernel lacks it (" + why + ")";
      notes.push_back(name + " not applied: " + why);
      break;
    }
  }
  return notes;
}

std::string SandboxReport::describe() const {
  std::string applied, missing;
  for (unsigned i = 0; i < kSandboxMeasureCount; ++i) {
    std::string &list = state[i] == Applied ? applied : missing;
    list += (list.empty() ? "" : ", ");
    list += sandboxMeasureName(SandboxMeasure(i));
  }
  std::string text = "sandbox: applied " + (applied.empty() ? "none" : applied);
  if (!missing.empty())
    text += "; not applied " + missing;
  if (landlockAbi > 0)
    text += " (Landlock ABI " + std::to_string(landlockAbi) + ")";
  return text;
}

Sandbox::Sandbox(SandboxOptions options) : opts(std::move(options)) {
  if (Result<SandboxSkips> skips = sandboxSkips(opts))
    skipped = *skips;
  writable.push_back({opts.scratchDir, true});
  // A site whose GPU driver writes somewhere else adds the place here.
  std::vector<std::string> patterns = opts.writablePaths;
  if (const char *env = std::getenv("DICE_SANDBOX_WRITABLE"); env && *env) {
    std::string list = env;
    for (size_t at = 0; at <= list.size();) {
      size_t end = std::min(list.find(':', at), list.size());
      if (end > at)
        patterns.push_back(list.substr(at, end - at));
      at = end + 1;
    }
  }
  for (const std::string &pattern : patterns) {
    glob_t matches{};
    if (glob(pattern.c_str(), GLOB_NOSORT, nullptr, &matches) == 0) {
      for (size_t i = 0; i < matches.gl_pathc; ++i) {
        // A link could lead anywhere (/proc/self/root is "/"): only what
        // the pattern names itself is made writable.
        struct stat st;
        if (lstat(matches.gl_pathv[i], &st) == 0 && !S_ISLNK(st.st_mode))
          writable.push_back({matches.gl_pathv[i], S_ISDIR(st.st_mode)});
      }
    }
    globfree(&matches);
  }
  // Map the caller's ids onto themselves, so that the worker sees the uid
  // and gid it would see outside the namespace.
  uidMap = std::to_string(getuid()) + " " + std::to_string(getuid()) + " 1\n";
  gidMap = std::to_string(getgid()) + " " + std::to_string(getgid()) + " 1\n";
  filter = buildSyscallFilter();
}

Sandbox::~Sandbox() = default;

void Sandbox::applyLandlock(SandboxReport &report) const noexcept {
  bool wantWrites = !skipped[unsigned(SandboxMeasure::FilesystemWrites)];
  bool wantTcp = !skipped[unsigned(SandboxMeasure::TcpRules)];
  bool wantSignals = !skipped[unsigned(SandboxMeasure::SignalScope)];
  if (!wantWrites && !wantTcp && !wantSignals)
    return;
  // Records `state` for each of the three measures not left out; those the
  // kernel's ABI lacks are Unsupported.
  auto recordAll = [&](int8_t state, int error, long abi) {
    if (wantWrites)
      record(report, SandboxMeasure::FilesystemWrites, state, error);
    if (wantTcp)
      record(report, SandboxMeasure::TcpRules,
             abi >= 4 ? state : int8_t(SandboxReport::Unsupported), error);
    if (wantSignals)
      record(report, SandboxMeasure::SignalScope,
             abi >= 6 ? state : int8_t(SandboxReport::Unsupported), error);
  };

  long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0,
                     LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 0) {
    int error = errno;
    bool missing = error == ENOSYS || error == EOPNOTSUPP;
    return recordAll(
        missing ? SandboxReport::Unsupported : SandboxReport::Failed, error, 6);
  }
  report.landlockAbi = int32_t(abi);
  // Every write-type right is handled, so it is denied except beneath the
  // rules' directories; reading and executing stay unrestricted (the
  // worker loads CUDA, LibTorch and the candidate's library).
  uint64_t writes = 0;
  if (wantWrites) {
    writes = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
             LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
             LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
             LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
             LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
    if (abi >= 2)
      writes |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3)
      writes |= LANDLOCK_ACCESS_FS_TRUNCATE;
  }
  RulesetAttr attr{writes, 0, 0};
  size_t attrSize = offsetof(RulesetAttr, handledAccessNet);
  if (abi >= 4) {
    // No rules: no TCP port may be bound or connected to.
    if (wantTcp)
      attr.handledAccessNet =
          LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
    attrSize = offsetof(RulesetAttr, scoped);
  }
  if (abi >= 6) {
    // Signals only to processes in this sandbox: not to the supervisor,
    // not to other users' processes of the same uid.
    if (wantSignals)
      attr.scoped = LANDLOCK_SCOPE_SIGNAL;
    attrSize = sizeof(RulesetAttr);
  }
  if (!attr.handledAccessFs && !attr.handledAccessNet && !attr.scoped)
    return recordAll(SandboxReport::Unsupported, 0, abi); // nothing to ask

  int error = 0;
  int ruleset = int(syscall(SYS_landlock_create_ruleset, &attr, attrSize, 0));
  if (ruleset < 0)
    error = errno;
  // Of the handled rights only these apply to a file that is not a
  // directory; the kernel rejects a file rule with any other.
  uint64_t fileWrites =
      writes & (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE);
  for (size_t i = 0; writes && ruleset >= 0 && !error && i < writable.size();
       ++i) {
    int fd = open(writable[i].path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      // A path that vanished since it was expanded is no reason to stay
      // unconfined; a missing scratch only leaves the worker read-only.
      continue;
    }
    landlock_path_beneath_attr rule{};
    rule.allowed_access = writable[i].directory ? writes : fileWrites;
    rule.parent_fd = fd;
    if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH,
                &rule, 0) != 0)
      error = errno;
    close(fd);
  }
  if (ruleset >= 0 && !error &&
      syscall(SYS_landlock_restrict_self, ruleset, 0) != 0)
    error = errno;
  if (ruleset >= 0)
    close(ruleset);
  recordAll(error ? SandboxReport::Failed : SandboxReport::Applied, error, abi);
}

void Sandbox::applyInChild(pid_t supervisor,
                           SandboxReport &report) const noexcept {
  report = SandboxReport();
  if (opts.disabled)
    return;

  auto skip = [&](SandboxMeasure measure) {
    return skipped[unsigned(measure)];
  };
  // Each measure left out on request stays NotAttempted, which the report
  // reads as "disabled".

  // Landlock and seccomp require it (or CAP_SYS_ADMIN); it also keeps
  // setuid helpers from elevating (so a worker cannot undo the rest).
  if (skip(SandboxMeasure::NoNewPrivileges)) {
  } else if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0) {
    record(report, SandboxMeasure::NoNewPrivileges, SandboxReport::Applied);
  } else {
    record(report, SandboxMeasure::NoNewPrivileges, SandboxReport::Failed,
           errno);
  }

  if (!skip(SandboxMeasure::ResourceLimits))
    applyResourceLimits(opts, report);

  // A fresh network namespace has only a loopback that is down. The user
  // namespace makes it possible without privileges; privileged callers where
  // user namespaces are off can still get the network namespace alone.
  if (skip(SandboxMeasure::NetworkNamespace)) {
  } else if (unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0) {
    writeProcFile("/proc/self/setgroups", "deny", 4);
    writeProcFile("/proc/self/uid_map", uidMap.data(), uidMap.size());
    writeProcFile("/proc/self/gid_map", gidMap.data(), gidMap.size());
    record(report, SandboxMeasure::NetworkNamespace, SandboxReport::Applied);
  } else {
    int error = errno;
    if (unshare(CLONE_NEWNET) == 0)
      record(report, SandboxMeasure::NetworkNamespace, SandboxReport::Applied);
    else
      record(report, SandboxMeasure::NetworkNamespace, SandboxReport::Failed,
             error);
  }

  // Armed after the namespace change so that no credential change can clear
  // it; the parent may have died before it was armed.
  if (skip(SandboxMeasure::ParentDeathSignal)) {
  } else if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0) {
    record(report, SandboxMeasure::ParentDeathSignal, SandboxReport::Applied);
    if (getppid() != supervisor)
      _exit(127);
  } else {
    record(report, SandboxMeasure::ParentDeathSignal, SandboxReport::Failed,
           errno);
  }

  applyLandlock(report);

  // Last: the filter forbids setsid, which the caller has already done.
  if (skip(SandboxMeasure::SyscallFilter)) {
  } else if (filter.empty()) {
    record(report, SandboxMeasure::SyscallFilter, SandboxReport::Unsupported);
  } else {
    sock_fprog program{static_cast<unsigned short>(filter.size()),
                       const_cast<sock_filter *>(filter.data())};
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) == 0)
      record(report, SandboxMeasure::SyscallFilter, SandboxReport::Applied);
    else
      record(report, SandboxMeasure::SyscallFilter,
             errno == EINVAL || errno == ENOSYS ? SandboxReport::Unsupported
                                                : SandboxReport::Failed,
             errno);
  }
}

} // namespace dice
