//===- SupportTest.cpp - the result type and whole-file reads -------------===//

#include "dice/Support/File.h"
#include "dice/Support/Result.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
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

} // namespace
