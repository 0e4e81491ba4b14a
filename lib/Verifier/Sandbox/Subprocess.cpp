//===- Subprocess.cpp - run a tool with a deadline ------------------------===//

#include "dice/Sandbox/Subprocess.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

namespace dice {

ProcessResult runProcess(const std::vector<std::string> &argv,
                         const std::string &outputPath, double timeoutSeconds) {
  ProcessResult result;
  auto start = std::chrono::steady_clock::now();
  auto elapsedMs = [&] {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - start)
        .count();
  };
  if (argv.empty()) {
    result.spawnError = "no command";
    return result;
  }

  std::vector<char *> args;
  for (const std::string &arg : argv)
    args.push_back(const_cast<char *>(arg.c_str()));
  args.push_back(nullptr);

  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&files, 1, outputPath.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&files, 1, 2);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  // A group of its own: the deadline must reach nvcc's children too.
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);

  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &files, &attributes, args.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  posix_spawnattr_destroy(&attributes);
  if (rc != 0) {
    result.spawnError = "cannot run " + argv[0] + ": " + std::strerror(rc);
    result.milliseconds = elapsedMs();
    return result;
  }

  // Polling keeps this usable from several threads at once; builds take
  // seconds, so 20 ms of latency does not matter.
  int status = 0;
  while (true) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid)
      break;
    if (done < 0 && errno != EINTR) {
      result.spawnError = std::string("waitpid: ") + std::strerror(errno);
      break;
    }
    if (timeoutSeconds > 0 && elapsedMs() > timeoutSeconds * 1000) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      result.timedOut = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Helpers the tool left behind die with it.
  kill(-pid, SIGKILL);
  if (WIFEXITED(status))
    result.exitCode = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    result.signal = WTERMSIG(status);
  result.milliseconds = elapsedMs();
  return result;
}

} // namespace dice
