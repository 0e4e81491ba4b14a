//===- TestWorker.cpp - a worker that misbehaves on request --------------===//
//
// Speaks the worker protocol of WorkerPool.h and does what each request's
// "do" says: answer, crash in the ways generated kernels crash, hang,
// replace its log before it dies, or probe the sandbox (network, file
// writes, signals, process groups) and report the errno it got. Options:
// --scratch DIR (checked against the environment), --not-ready (says
// ready:false), --die-at-start (exits 7 before the ready line), --silent
// (never says ready).
//
//===----------------------------------------------------------------------===//

#include <nlohmann/json.hpp>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using nlohmann::json;

#if defined(__SANITIZE_ADDRESS__)
#define DICE_TEST_WORKER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DICE_TEST_WORKER_ASAN 1
#endif
#endif
#ifdef DICE_TEST_WORKER_ASAN
/// The worker stands in for a generated kernel, which is not instrumented and
/// dies by the signal it raises. In a sanitizer build ASan's SEGV handler
/// would report the fault and end the worker with SIGABRT instead, so the
/// tests of the "segfault" action would see the wrong signal.
extern "C" const char *__asan_default_options() { return "handle_segv=0"; }
#endif

namespace {

int *volatile nullTarget = nullptr;

/// The "segfault" action's fault, a real one: UBSan's null check (a
/// sanitizer build) would otherwise stop it first and abort.
__attribute__((noinline, no_sanitize("null"))) void storeThroughNull() {
  *nullTarget = 1;
}

volatile unsigned long spin = 0;

void send(const json &message) {
  std::string line = message.dump() + "\n";
  const char *data = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = write(3, data, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      std::_Exit(99);
    data += n;
    left -= size_t(n);
  }
}

/// 0 when `call` succeeded, its errno otherwise.
int errnoOf(int result) { return result < 0 ? errno : 0; }

int socketErrno(int family, int type) {
  int fd = socket(family, type, 0);
  if (fd < 0)
    return errno;
  close(fd);
  return 0;
}

json probeNetwork(int port) {
  json result;
  result["socket_inet"] = socketErrno(AF_INET, SOCK_STREAM);
  result["socket_inet6"] = socketErrno(AF_INET6, SOCK_STREAM);
  result["socket_packet"] = socketErrno(AF_PACKET, SOCK_RAW);
  result["socket_unix"] = socketErrno(AF_UNIX, SOCK_STREAM);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  result["connected"] = false;
  if (fd < 0) {
    result["connect"] = errno;
    return result;
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(uint16_t(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int rc = connect(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address));
  result["connect"] = errnoOf(rc);
  result["connected"] = rc == 0;
  close(fd);
  return result;
}

json probeWrites(const json &request, const std::string &scratch) {
  json result;
  std::string outside = request.value("outside", "");
  std::string existing = request.value("existing", "");
  result["create_outside"] =
      errnoOf(open(outside.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644));
  result["write_existing"] = errnoOf(open(existing.c_str(), O_WRONLY));
  result["truncate_existing"] = errnoOf(truncate(existing.c_str(), 0));
  result["unlink_existing"] = errnoOf(unlink(existing.c_str()));
  result["mkdir_outside"] = errnoOf(mkdir((outside + ".d").c_str(), 0755));
  int null = open("/dev/null", O_WRONLY);
  result["write_dev_null"] = errnoOf(null);
  if (null >= 0)
    close(null);
  if (request.contains("device"))
    result["write_device"] = errnoOf(
        open(request["device"].get<std::string>().c_str(), O_WRONLY));
  std::string inside = scratch + "/inside.txt";
  int fd = open(inside.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  result["create_inside"] = errnoOf(fd);
  if (fd >= 0) {
    result["write_inside"] = errnoOf(int(write(fd, "ok\n", 3)));
    close(fd);
  }
  return result;
}

json probeProcess(const std::string &scratch) {
  json result;
  rlimit limit{};
  getrlimit(RLIMIT_CORE, &limit);
  result["core"] = uint64_t(limit.rlim_cur);
  getrlimit(RLIMIT_FSIZE, &limit);
  result["fsize"] = uint64_t(limit.rlim_cur);
  getrlimit(RLIMIT_NOFILE, &limit);
  result["nofile"] = uint64_t(limit.rlim_cur);
  getrlimit(RLIMIT_CPU, &limit);
  result["cpu"] = uint64_t(limit.rlim_cur);
  json fds = json::array();
  if (DIR *dir = opendir("/proc/self/fd")) {
    while (dirent *entry = readdir(dir)) {
      if (entry->d_name[0] == '.')
        continue;
      int fd = std::atoi(entry->d_name);
      if (fd != dirfd(dir))
        fds.push_back(fd);
    }
    closedir(dir);
  }
  result["fds"] = fds;
  for (const char *name :
       {"TMPDIR", "HOME", "CUDA_CACHE_PATH", "DICE_WORKER_SCRATCH"}) {
    const char *value = std::getenv(name);
    result[name] = value ? value : "";
  }
  char cwd[4096] = "";
  result["cwd"] = getcwd(cwd, sizeof(cwd)) ? cwd : "";
  result["scratch_arg"] = scratch;
  result["uid"] = getuid();
  result["pgid_is_pid"] = getpgrp() == getpid();
  result["sid_is_pid"] = getsid(0) == getpid();
  return result;
}

/// setsid() in a forked child, whose exit status carries the errno.
int setsidErrno() {
  pid_t child = fork();
  if (child == 0)
    _exit(setsid() < 0 ? errno : 0);
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

} // namespace

int main(int argc, char **argv) {
  std::string scratch;
  bool notReady = false, dieAtStart = false, silent = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--scratch" && i + 1 < argc)
      scratch = argv[++i];
    else if (arg == "--not-ready")
      notReady = true;
    else if (arg == "--die-at-start")
      dieAtStart = true;
    else if (arg == "--silent")
      silent = true;
  }
  std::fprintf(stderr, "test worker %d starting\n", int(getpid()));
  if (dieAtStart)
    return 7;
  if (silent)
    for (;;)
      pause();
  if (notReady) {
    send({{"ready", false}, {"error", "no device in this test"}});
    return 1;
  }
  send({{"ready", true}, {"worker", "test"}, {"pid", getpid()}});

  for (std::string line; std::getline(std::cin, line);) {
    json request = json::parse(line, nullptr, false);
    if (!request.is_object())
      return 98;
    std::string action = request.value("do", "echo");
    json reply = {{"id", request["id"]}, {"pid", getpid()}};
    std::fprintf(stderr, "request %s: %s\n", request["id"].dump().c_str(),
                 action.c_str());
    std::fflush(stderr);

    if (action == "echo") {
      reply["echo"] = request.value("payload", json());
    } else if (action == "segfault") {
      storeThroughNull();
    } else if (action == "abort") {
      std::abort();
    } else if (action == "hang") {
      for (;;)
        spin = spin + 1;
    } else if (action == "exit") {
      std::exit(request.value("code", 3));
    } else if (action == "exit-after-reply") {
      reply["exit"] = true;
      send(reply);
      return 0;
    } else if (action == "fork-sleeper-hang") {
      pid_t sleeper = fork();
      if (sleeper == 0)
        for (;;)
          pause();
      std::fprintf(stderr, "sleeper %d\n", int(sleeper));
      std::fflush(stderr);
      for (;;)
        spin = spin + 1;
    } else if (action == "hold") {
      // Answers, then never reads its stdin again: only a signal ends it.
      send(reply);
      for (;;)
        spin = spin + 1;
    } else if (action == "garbage") {
      send("not an object");
      continue;
    } else if (action == "wrong-id") {
      reply["id"] = request["id"].get<uint64_t>() + 1000;
    } else if (action == "spam") {
      std::string text(99, 'x');
      text += '\n';
      for (size_t written = 0, bytes = request.value("bytes", 1 << 20);
           written < bytes; written += text.size())
        std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    } else if (action == "replace-log") {
      // Puts something else where the pool created worker.log, then dies:
      // the pool must still read its tail, and promptly.
      std::string by = request.value("by", "fifo");
      unlink("worker.log");
      int made = by == "fifo"       ? mkfifo("worker.log", 0644)
                 : by == "dev-zero" ? symlink("/dev/zero", "worker.log")
                                    : mkdir("worker.log", 0755);
      std::fprintf(stderr, "replaced worker.log by %s: %s\n", by.c_str(),
                   made == 0 ? "done" : std::strerror(errno));
      std::fflush(stderr);
      std::abort();
    } else if (action == "network") {
      reply["network"] = probeNetwork(request.value("port", 0));
    } else if (action == "write") {
      reply["write"] = probeWrites(request, scratch);
    } else if (action == "process") {
      reply["process"] = probeProcess(scratch);
    } else if (action == "setsid") {
      reply["setsid"] = setsidErrno();
    } else if (action == "signal") {
      reply["signal"] = errnoOf(kill(pid_t(request.value("pid", 0)), 0));
    } else {
      reply["error"] = "unknown action " + action;
    }
    send(reply);
  }
  return 0;
}
