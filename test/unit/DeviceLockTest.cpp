//===- DeviceLockTest.cpp - workers take turns to time --------------------===//
//
// Two processes share the device lock as two workers do: while one holds
// it exclusively (timing), the other cannot take it shared (checking)
// until the first lets go, and gives up when its request's waiting budget
// is spent; lock files that cannot be opened are an error.
//
//===----------------------------------------------------------------------===//

#include "../../lib/Verifier/Worker/DeviceLock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace dice;

namespace {

// First in the file: each test forks before this process opens its lock
// (DeviceLock::process() reads the environment once).
TEST(DeviceLock, ALockFileThatCannotBeOpenedIsAnError) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    setenv("DICE_DEVICE_LOCK", "/nonexistent/dice-device-lock", 1);
    const DeviceLock &lock = DeviceLock::process();
    bool named = lock.error().find("/nonexistent/dice-device-lock") != std::string::npos;
    _exit(!lock.active() && named ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(DeviceLock, ATimerKeepsCheckersOutUntilItIsDone) {
  std::string dir = testing::TempDir() + "device-lock-" + std::to_string(getpid());
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  std::string path = dir + "/lock";
  for (const std::string &file : {path, path + ".turnstile"})
    close(open(file.c_str(), O_WRONLY | O_CREAT, 0644));
  setenv("DICE_DEVICE_LOCK", path.c_str(), 1);

  int held[2], release[2];
  ASSERT_EQ(pipe(held), 0);
  ASSERT_EQ(pipe(release), 0);
  pid_t timer = fork();
  ASSERT_GE(timer, 0);
  if (timer == 0) {
    // The other worker: times, then waits to be told to finish.
    DeviceLock::Guard alone = DeviceLock::process().exclusive();
    char byte = 1;
    bool ok = write(held[1], &byte, 1) == 1 && read(release[0], &byte, 1) == 1;
    _exit(ok && DeviceLock::process().active() ? 0 : 1);
  }
  char byte = 0;
  ASSERT_EQ(read(held[0], &byte, 1), 1);

  // A request that may wait 0.3 s in all gives up, and says how long it
  // waited; the lock is not held after.
  DeviceLock::process().setWaitBudget(0.3);
  try {
    DeviceLock::Guard inUse = DeviceLock::process().shared();
    ADD_FAILURE() << "took the lock shared while another held it exclusively";
  } catch (const DeviceLockTimeout &timeout) {
    EXPECT_GE(timeout.waitedSeconds, 0.3);
  }
  DeviceLock::process().setWaitBudget(0);

  std::atomic<bool> checking{false};
  std::thread checker([&] {
    DeviceLock::Guard inUse = DeviceLock::process().shared();
    checking = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(checking) << "took the lock shared while another held it exclusively";
  ASSERT_EQ(write(release[1], &byte, 1), 1);
  checker.join();
  EXPECT_TRUE(checking);
  int status = 0;
  ASSERT_EQ(waitpid(timer, &status, 0), timer);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_TRUE(DeviceLock::process().active());
  unsetenv("DICE_DEVICE_LOCK");
  // POSIX calls, not std::filesystem: the test links LibTorch, whose copy
  // of the filesystem library does not match this compiler's.
  unlink(path.c_str());
  unlink((path + ".turnstile").c_str());
  rmdir(dir.c_str());
}

} // namespace
