//===- SupportTest.cpp - the result type and whole-file reads -------------===//

#include "dice/Support/File.h"
#include "dice/Support/Result.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace dice;
namespace fs = std::filesystem;

namespace {

TEST(ErrorFormat, PrintsOnlyTheKnownParts) {
  Error located;
  located.file = "dice.toml";
  located.line = 3;
  located.column = 7;
  located.key = "sampling.top_k";
  located.message = "must be at least 1";
  EXPECT_EQ(located.format(),
            "dice.toml:3:7: error: sampling.top_k: must be at least 1");

  located.column = 0;
  EXPECT_EQ(located.format(),
            "dice.toml:3: error: sampling.top_k: must be at least 1");

  EXPECT_EQ(Error("kernels.db", "is not a SQLite database").format(),
            "kernels.db: error: is not a SQLite database");
  EXPECT_EQ(Error("no file at all").format(), "error: no file at all");

  // A line without a file says nothing on its own: it is left out.
  Error lineOnly("orphan line");
  lineOnly.line = 9;
  EXPECT_EQ(lineOnly.format(), "error: orphan line");
}

TEST(ErrorDescribe, IsTheFormatWithoutTheSeverity) {
  Error located("dice.toml", 3, 7, "sampling.top_k", "must be at least 1");
  EXPECT_EQ(located.describe(),
            "dice.toml:3:7: sampling.top_k: must be at least 1");
  EXPECT_EQ(Error("kernels.db", "is not a SQLite database").describe(),
            "kernels.db: is not a SQLite database");
  Error keyOnly("missing");
  keyOnly.key = "hidden_size";
  EXPECT_EQ(keyOnly.describe(), "hidden_size: missing");
  EXPECT_EQ(Error("no file at all").describe(), "no file at all");
}

TEST(ErrorDescribe, WithoutAFileALineIsSpelledOut) {
  // Text parsed from memory (a scaffold's program): no file to prefix.
  Error error("expected a number");
  error.key = "ops[3].value";
  error.line = 2;
  error.column = 98;
  EXPECT_EQ(error.describe(), "ops[3].value: line 2, column 98: expected a number");
  error.column = 0;
  error.key.clear();
  EXPECT_EQ(error.describe(), "line 2: expected a number");
}

TEST(Result, HoldsAValueOrAnError) {
  Result<std::unique_ptr<int>> value = std::make_unique<int>(42);
  ASSERT_TRUE(value);
  EXPECT_EQ(**value, 42);
  std::unique_ptr<int> taken = value.take();
  EXPECT_EQ(*taken, 42);

  Result<int> failed = Error("x.json", "bad");
  EXPECT_FALSE(failed);
  EXPECT_EQ(failed.error().file, "x.json");
  EXPECT_EQ(failed.error().message, "bad");
}

TEST(Result, StatusIsSuccessUnlessGivenAnError) {
  Status ok;
  EXPECT_TRUE(ok);
  Status failed = Error("f", "broken");
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().format(), "f: error: broken");
}

TEST(ReadFile, ReturnsTheBytesOrSaysWhyNot) {
  fs::path dir = fs::temp_directory_path() /
                 ("dice-support-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string bytes("a\0b\r\n\xff", 6);
  {
    std::ofstream out(dir / "data.bin", std::ios::binary);
    out << bytes;
  }
  Result<std::string> read = readFile((dir / "data.bin").string());
  ASSERT_TRUE(read) << read.error().format();
  EXPECT_EQ(*read, bytes);

  Result<std::string> missing = readFile((dir / "missing").string());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().file, (dir / "missing").string());
  EXPECT_NE(missing.error().message.find("No such file"), std::string::npos)
      << missing.error().message;

  Result<std::string> folder = readFile(dir.string());
  ASSERT_FALSE(folder);
  EXPECT_NE(folder.error().message.find("is a directory"), std::string::npos);
  fs::remove_all(dir);
}

TEST(WriteFileAtomically, ReplacesTheFileThroughANewInode) {
  fs::path dir = fs::temp_directory_path() /
                 ("dice-support-atomic-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string path = (dir / "manifest.json").string();
  ASSERT_TRUE(writeFileAtomically(path, "old"));
  // A hard link keeps the old bytes, as a process that mapped them does.
  fs::create_hard_link(path, dir / "mapped");
  std::string bytes("new\0bytes", 9);
  ASSERT_TRUE(writeFileAtomically(path, bytes));
  EXPECT_EQ(*readFile(path), bytes);
  EXPECT_EQ(fs::hard_link_count(path), 1u);
  EXPECT_EQ(*readFile((dir / "mapped").string()), "old");
  // No temporary is left beside it.
  size_t files = 0;
  for (const auto &entry : fs::directory_iterator(dir))
    files += entry.is_regular_file();
  EXPECT_EQ(files, 2u);

  // A file it replaces keeps its permissions.
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  ASSERT_TRUE(writeFileAtomically(path, "private"));
  struct stat info;
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0600u);

  Status refused = writeFileAtomically((dir / "no-such-folder" / "f").string(), "x");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("cannot write"), std::string::npos);
  fs::remove_all(dir);
}

TEST(RemoveTree, RemovesAFolderWithEverythingUnderIt) {
  fs::path dir = fs::temp_directory_path() /
                 ("dice-support-remove-" + std::to_string(::getpid()));
  fs::create_directories(dir / "a" / "b");
  std::ofstream(dir / "a" / "b" / "f") << "x";
  std::ofstream(dir / "g") << "y";
  fs::path outside = fs::temp_directory_path() /
                     ("dice-support-kept-" + std::to_string(::getpid()));
  std::ofstream(outside) << "kept";
  fs::create_symlink(outside, dir / "link");
  ASSERT_TRUE(removeTree(dir.string()));
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_TRUE(fs::exists(outside)); // a link is removed, not followed
  fs::remove(outside);
  EXPECT_TRUE(removeTree(dir.string())); // nothing there: nothing to do
}

TEST(RemoveTree, RemovesFoldersTheirOwnerTookEveryRightFrom) {
  // What a sandboxed worker may leave in its scratch folder: folders with
  // mode 0, one inside another, with files. Root's rights would hide a
  // missed chmod, so as root the removal runs in a child as `nobody`, in a
  // folder `nobody` owns under /tmp (which everyone may enter; $TMPDIR
  // may lie below a folder `nobody` cannot).
  fs::path base = fs::path(::geteuid() == 0 ? "/tmp" : fs::temp_directory_path()) /
                  ("dice-support-locked-" + std::to_string(::getpid()));
  fs::path dir = base / "scratch";
  fs::create_directories(dir / "a" / "b");
  std::ofstream(dir / "a" / "b" / "f") << "x";
  std::ofstream(dir / "a" / "g") << "y";
  const uid_t nobody = 65534;
  bool asRoot = ::geteuid() == 0;
  if (asRoot)
    for (fs::path p : {base, dir, dir / "a", dir / "a" / "b",
                       dir / "a" / "b" / "f", dir / "a" / "g"})
      ASSERT_EQ(::lchown(p.c_str(), nobody, nobody), 0) << p;
  ASSERT_EQ(::chmod((dir / "a" / "b").c_str(), 0), 0);
  ASSERT_EQ(::chmod((dir / "a").c_str(), 0), 0);

  auto remove = [&] { return removeTree(dir.string()) ? 0 : 1; };
  int status = 0;
  if (asRoot) {
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0)
      ::_exit(::setgid(nobody) == 0 && ::setuid(nobody) == 0 ? remove() : 2);
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    status = WEXITSTATUS(status);
  } else {
    status = remove();
  }
  EXPECT_EQ(status, 0);
  EXPECT_FALSE(fs::exists(dir));
  // Whatever happened, leave nothing behind.
  if (fs::exists(dir / "a")) {
    ::chmod((dir / "a").c_str(), 0700);
    ::chmod((dir / "a" / "b").c_str(), 0700);
  }
  fs::remove_all(base);
}

} // namespace
