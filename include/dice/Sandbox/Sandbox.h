//===- Sandbox.h - confinement of a worker process --------------*- C++ -*-===//
//
// Generated kernels run only in worker processes. Between fork and exec the
// child confines itself: no new privileges, death with its supervisor,
// resource limits, no network, file writes only beneath its scratch
// directory, no signals to processes outside its sandbox, no escape from its
// process group. What the kernel refuses is reported, never skipped
// silently: the GPU machine's kernel may allow less than the development
// machine's.
//
// A `Sandbox` is prepared in the parent (it allocates: paths, the seccomp
// program) and applied in the child with system calls only, because the
// child of a multithreaded parent may not allocate.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_SANDBOX_SANDBOX_H
#define DICE_SANDBOX_SANDBOX_H

#include "dice/Support/Result.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <sys/types.h>

struct sock_filter;

namespace dice {

/// The measures, in the order the child applies them.
enum class SandboxMeasure : uint8_t {
  NoNewPrivileges,  ///< PR_SET_NO_NEW_PRIVS: setuid binaries do not elevate
  ResourceLimits,   ///< RLIMIT_CORE, RLIMIT_FSIZE, RLIMIT_NOFILE, RLIMIT_CPU
  NetworkNamespace, ///< unshare(CLONE_NEWUSER | CLONE_NEWNET): no interfaces
  ParentDeathSignal, ///< PR_SET_PDEATHSIG SIGKILL: dies with the supervisor
  FilesystemWrites, ///< Landlock: writes only to scratch and writablePaths
  TcpRules,         ///< Landlock (ABI 4): no TCP bind or connect
  SignalScope,      ///< Landlock (ABI 6): no signals out of the sandbox
  SyscallFilter,    ///< seccomp: sockets other than AF_UNIX/AF_NETLINK,
                    ///< io_uring, setsid/setpgid, foreign syscall ABIs fail
};
inline constexpr unsigned kSandboxMeasureCount = 8;

/// The name of a measure in notes and reports (`network-namespace`, ...).
const char *sandboxMeasureName(SandboxMeasure measure);

/// Whether the measure keeps the worker off the network.
bool isNetworkMeasure(SandboxMeasure measure);

/// Which measures are left out, by SandboxMeasure.
using SandboxSkips = std::array<bool, kSandboxMeasureCount>;

/// What the child did, written by the child through a pipe (trivially
/// copyable, no pointers).
struct SandboxReport {
  enum State : int8_t { NotAttempted, Applied, Failed, Unsupported };
  int8_t state[kSandboxMeasureCount] = {};
  int32_t error[kSandboxMeasureCount] = {}; ///< errno of the failing call
  int32_t landlockAbi = 0;                  ///< 0: no Landlock

  bool applied(SandboxMeasure measure) const {
    return state[unsigned(measure)] == Applied;
  }
  /// One sentence per measure that is not applied, e.g. "network-namespace
  /// not applied: unshare(CLONE_NEWUSER|CLONE_NEWNET): Operation not
  /// permitted".
  std::vector<std::string> notes() const;
  /// One line: the measures applied and those not.
  std::string describe() const;
};

struct SandboxOptions {
  /// The worker's scratch directory: its only writable place besides the
  /// device nodes.
  std::string scratchDir;
  /// Further places writes are allowed to (beneath, for directories); glob
  /// patterns, expanded when the sandbox is prepared. GPU device nodes are
  /// opened read-write, drivers use shared memory and write their own
  /// process's /proc entries. Not all of /dev: a
  /// root worker could write raw disks there. $DICE_SANDBOX_WRITABLE adds
  /// more (colon-separated patterns). Symbolic links are never followed
  /// into a rule (`/proc/self/root` would open the whole file system).
  std::vector<std::string> writablePaths = {
      "/dev/shm",     "/dev/null",    "/dev/zero", "/dev/full",
      "/dev/random",  "/dev/urandom", "/dev/tty",  "/dev/nvidia*",
      "/dev/nvidia-caps/*", "/dev/dri/*",
      // The worker's own /proc entries ("self" resolves in the worker):
      // the CUDA driver does not initialise where it cannot write them
      // (cudaErrorOperatingSystem). Links among them are skipped.
      "/proc/self/*"};
  uint64_t maxFileBytes = uint64_t(1) << 30; ///< RLIMIT_FSIZE
  uint64_t maxOpenFiles = 1024;              ///< RLIMIT_NOFILE
  /// RLIMIT_CPU, over the worker's whole life: a warm worker serves many
  /// requests, and the per-request deadline is the supervisor's watchdog.
  uint64_t cpuSeconds = 6 * 3600;
  /// Apply nothing (the pool's tests of protocol handling, debugging).
  bool disabled = false;
  /// Measures left out, by sandboxMeasureName, comma-separated; e.g.
  /// "network-namespace" where a driver refuses to work inside a user
  /// namespace. Any measure can be left out, each alone (without
  /// `no-new-privileges`, Landlock and seccomp need CAP_SYS_ADMIN in the
  /// worker's user namespace, which `network-namespace` gives it). Those
  /// named by $DICE_SANDBOX_SKIP are added, so a site can relax one measure
  /// without a rebuild; each is reported.
  std::string skip;
};

/// The measures `options.skip` and $DICE_SANDBOX_SKIP leave out. Each is a
/// list of sandboxMeasureName's, comma-separated (blanks around a name and
/// empty entries are ignored); a name that is no measure is an error that
/// names it, says which list it is in and lists the valid names.
Result<SandboxSkips> sandboxSkips(const SandboxOptions &options);

/// A sandbox prepared for one child. Not copyable: the child reads the
/// prepared buffers of exactly this object.
class Sandbox {
public:
  /// A skip list with an unknown name (sandboxSkips) skips nothing: check
  /// it first to report the mistake.
  explicit Sandbox(SandboxOptions options);
  ~Sandbox();
  Sandbox(const Sandbox &) = delete;
  Sandbox &operator=(const Sandbox &) = delete;

  /// Applies every measure to the calling process and fills `report`.
  /// Async-signal-safe: call it in the child between fork and exec, after
  /// the child's file descriptors are set up (Landlock rules are opened as
  /// descriptors and closed again). Never fails as a whole: a measure the
  /// kernel refuses is recorded in `report` and the next one is tried.
  /// `supervisor` is the parent's pid; the child exits if the parent is
  /// already gone when the death signal is armed.
  void applyInChild(pid_t supervisor, SandboxReport &report) const noexcept;

  const SandboxOptions &options() const { return opts; }

private:
  /// The three Landlock measures, as one ruleset: the rights of those not
  /// left out, as far as the kernel's ABI has them.
  void applyLandlock(SandboxReport &report) const noexcept;

  SandboxOptions opts;
  struct WritablePath {
    std::string path;
    bool directory;
  };
  std::vector<WritablePath> writable; ///< scratch first, patterns expanded
  SandboxSkips skipped = {};
  std::string uidMap, gidMap;            ///< "<uid> <uid> 1\n"
  std::vector<sock_filter> filter;       ///< the seccomp program
};

} // namespace dice

#endif // DICE_SANDBOX_SANDBOX_H
