//===- KernelDatabaseTest.cpp - the SQLite kernel database ----------------===//

#include "dice/KernelDB/KernelDatabase.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace dice;

namespace {

namespace fs = std::filesystem;

/// A fresh folder per test, removed afterwards.
class KernelDatabaseTest : public ::testing::Test {
protected:
  void SetUp() override {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir = fs::temp_directory_path() /
          ("dice-kernel-db-" + std::to_string(::getpid()) + "-" + info->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  std::string file(const std::string &name) const { return (dir / name).string(); }

  fs::path dir;
};

KernelKey key(std::string arch = "sm_90", int scaffold = 1,
              std::string model = "dice-8b") {
  return {"k_3f9a", std::move(arch), scaffold, std::move(model)};
}

CandidateRecord record(const KernelKey &k, const std::string &hash,
                       VerdictStatus status = VerdictStatus::Accepted) {
  Verdict verdict;
  verdict.fingerprint = k.fingerprint;
  verdict.candidateHash = hash;
  verdict.status = status;
  if (status == VerdictStatus::Accepted || status == VerdictStatus::Slow)
    verdict.setTimings(1.0, status == VerdictStatus::Accepted ? 2.0 : 0.5);
  if (status != VerdictStatus::Accepted)
    verdict.reason = "test verdict";
  EXPECT_EQ(verdict.validate(), "");
  CandidateRecord r;
  r.candidateHash = hash;
  r.source = "__global__ void k() {} // " + hash;
  r.verdictJson = verdict.toJson();
  r.status = status;
  r.speedup = verdict.speedup;
  return r;
}

KernelDatabase openOrDie(const std::string &path,
                         OpenMode mode = OpenMode::ReadWrite) {
  auto db = KernelDatabase::open(path, mode);
  EXPECT_TRUE(db) << db.error().format();
  return std::move(*db);
}

/// The error opening `path` gives; fails the test when it opens.
std::string openError(const std::string &path) {
  auto db = KernelDatabase::open(path);
  EXPECT_FALSE(db) << path << " opened";
  return db ? std::string() : db.error().format();
}

void rawExec(const std::string &path, const char *sql) {
  sqlite3 *db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
}

std::vector<uint8_t> bytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(n);
  for (auto &b : out)
    b = static_cast<uint8_t>(rng());
  return out;
}

} // namespace

TEST_F(KernelDatabaseTest, RoundTripsRecordsAndArtifacts) {
  std::string path = file("kernels.db");
  KernelKey k = key();
  CandidateRecord withLibrary = record(k, "aaaa");
  withLibrary.artifact = bytes(70000, 1);
  withLibrary.artifact->at(0) = 0; // blobs, not C strings
  CandidateRecord without = record(k, "bbbb", VerdictStatus::Incorrect);
  without.createdAt = 1700000000;
  {
    KernelDatabase db = openOrDie(path);
    ASSERT_TRUE(db.put(k, withLibrary));
    ASSERT_TRUE(db.put(k, without));
  }
  KernelDatabase db = openOrDie(path, OpenMode::ReadOnly);
  auto records = db.candidates(k);
  ASSERT_TRUE(records) << records.error().format();
  ASSERT_EQ(records->size(), 2u);
  const CandidateRecord &a = (*records)[0], &b = (*records)[1];
  EXPECT_EQ(a.candidateHash, "aaaa");
  EXPECT_EQ(a.source, withLibrary.source);
  EXPECT_EQ(a.verdictJson, withLibrary.verdictJson);
  EXPECT_EQ(a.status, VerdictStatus::Accepted);
  EXPECT_EQ(a.speedup, 2.0);
  EXPECT_TRUE(a.hasArtifact);
  EXPECT_FALSE(a.artifact);
  EXPECT_GT(a.createdAt, 0);
  EXPECT_EQ(b.candidateHash, "bbbb");
  EXPECT_EQ(b.status, VerdictStatus::Incorrect);
  EXPECT_FALSE(b.speedup);
  EXPECT_FALSE(b.hasArtifact);
  EXPECT_EQ(b.createdAt, 1700000000);

  auto library = db.artifact(k, "aaaa");
  ASSERT_TRUE(library) << library.error().format();
  ASSERT_TRUE(*library);
  EXPECT_EQ(**library, *withLibrary.artifact);
  auto none = db.artifact(k, "bbbb");
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  auto unknown = db.artifact(k, "cccc");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().format().find("no candidate cccc"), std::string::npos);
}

TEST_F(KernelDatabaseTest, OpeningCreatesTheMissingFolders) {
  // dice.toml's default path, .dice/kernels.db, in a project without .dice/.
  std::string path = file("project/.dice/kernels.db");
  KernelDatabase db = openOrDie(path);
  ASSERT_TRUE(db.put(key(), record(key(), "aaaa")));
  auto stored = openOrDie(path, OpenMode::ReadOnly).candidates(key());
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->size(), 1u);
  // Read-only creates nothing; a folder that cannot be made is a located error.
  EXPECT_FALSE(KernelDatabase::open(file("absent/kernels.db"), OpenMode::ReadOnly));
  struct stat st;
  EXPECT_NE(stat(file("absent").c_str(), &st), 0);
  std::string error = openError(file("project/.dice/kernels.db/inner/kernels.db"));
  EXPECT_NE(error.find("cannot create its folder"), std::string::npos) << error;
}

TEST_F(KernelDatabaseTest, PutReplacesAReverifiedCandidateInPlace) {
  KernelDatabase db = openOrDie(file("kernels.db"));
  KernelKey k = key();
  ASSERT_TRUE(db.put(k, record(k, "aaaa", VerdictStatus::Unverified)));
  ASSERT_TRUE(db.put(k, record(k, "bbbb", VerdictStatus::Slow)));
  ASSERT_TRUE(db.put(k, record(k, "aaaa", VerdictStatus::Accepted)));
  auto records = db.candidates(k);
  ASSERT_TRUE(records);
  ASSERT_EQ(records->size(), 2u);
  EXPECT_EQ((*records)[0].candidateHash, "aaaa");
  EXPECT_EQ((*records)[0].status, VerdictStatus::Accepted);
}

TEST_F(KernelDatabaseTest, PutAllStoresEveryRecordOrNone) {
  KernelDatabase db = openOrDie(file("kernels.db"));
  KernelKey k = key();
  // One record that disagrees with its verdict refuses the whole set.
  std::vector<CandidateRecord> set = {record(k, "aaaa"), record(k, "bbbb"),
                                      record(k, "cccc")};
  set[2].status = VerdictStatus::Incorrect;
  Status refused = db.putAll(k, set);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().format().find("cccc"), std::string::npos);
  ASSERT_TRUE(db.candidates(k));
  EXPECT_TRUE(db.candidates(k)->empty());

  set[2] = record(k, "cccc", VerdictStatus::Incorrect);
  ASSERT_TRUE(db.putAll(k, set));
  auto records = db.candidates(k);
  ASSERT_TRUE(records);
  ASSERT_EQ(records->size(), 3u);
  EXPECT_EQ((*records)[0].candidateHash, "aaaa");
  EXPECT_EQ((*records)[2].candidateHash, "cccc");
  // Stored again (a re-verification): replaced in place, nothing doubled.
  ASSERT_TRUE(db.putAll(k, set));
  EXPECT_EQ(db.candidates(k)->size(), 3u);
}

TEST_F(KernelDatabaseTest, PutRefusesVerdictsThatDisagree) {
  KernelDatabase db = openOrDie(file("kernels.db"));
  KernelKey k = key();
  CandidateRecord bad = record(k, "aaaa");
  bad.verdictJson = "{not json";
  Status error = db.put(k, bad);
  ASSERT_FALSE(error);
  EXPECT_NE(error.error().message.find("invalid"), std::string::npos);
  bad = record(k, "aaaa");
  bad.candidateHash = "bbbb";
  ASSERT_FALSE(db.put(k, bad));
  bad = record(k, "aaaa");
  bad.status = VerdictStatus::Slow;
  ASSERT_FALSE(db.put(k, bad));
  ASSERT_FALSE(db.put(key("sm_80"), record(KernelKey{"k_other"}, "aaaa")));
  EXPECT_TRUE(db.candidates(k)->empty());
}

TEST_F(KernelDatabaseTest, KeysAreIsolated) {
  KernelDatabase db = openOrDie(file("kernels.db"));
  KernelKey k = key();
  ASSERT_TRUE(db.put(k, record(k, "aaaa")));
  ASSERT_TRUE(db.choose(k, "aaaa"));
  // The same fingerprint under another scheme names another computation.
  KernelKey otherScheme = key();
  otherScheme.fingerprintScheme = kFingerprintScheme + 1;
  // Prompts worded by other templates are another request of the model.
  KernelKey otherWording = key();
  otherWording.promptTemplate = "0123456789abcdef";
  for (const KernelKey &other :
       {key("sm_80"), key("sm_90", 2), key("sm_90", 1, "dice-1.7b"),
        KernelKey{"k_beef", "sm_90", 1, "dice-8b"}, otherScheme, otherWording}) {
    auto records = db.candidates(other);
    ASSERT_TRUE(records);
    EXPECT_TRUE(records->empty());
    auto choice = db.chosen(other);
    ASSERT_TRUE(choice);
    EXPECT_FALSE(*choice);
    EXPECT_FALSE(db.artifact(other, "aaaa"));
    EXPECT_FALSE(db.choose(other, "aaaa"));
  }
  EXPECT_EQ(db.candidates(k)->size(), 1u);
}

TEST_F(KernelDatabaseTest, ChoosesAmongStoredCandidates) {
  std::string path = file("kernels.db");
  KernelKey k = key();
  {
    KernelDatabase db = openOrDie(path);
    auto nothing = db.chosen(k);
    ASSERT_TRUE(nothing);
    EXPECT_FALSE(*nothing);
    ASSERT_TRUE(db.put(k, record(k, "aaaa")));
    ASSERT_TRUE(db.put(k, record(k, "bbbb")));
    Status error = db.choose(k, "cccc");
    ASSERT_FALSE(error);
    EXPECT_NE(error.error().format().find("no such candidate"),
              std::string::npos);
    ASSERT_TRUE(db.choose(k, "aaaa"));
    ASSERT_EQ((*db.chosen(k))->candidateHash, "aaaa");
    ASSERT_TRUE(db.choose(k, "bbbb"));
  }
  KernelDatabase db = openOrDie(path);
  auto choice = db.chosen(k);
  ASSERT_TRUE(choice);
  ASSERT_TRUE(*choice);
  EXPECT_EQ((*choice)->candidateHash, "bbbb");
  EXPECT_EQ((*choice)->source, record(k, "bbbb").source);
}

TEST_F(KernelDatabaseTest, RefusesFilesThatAreNotSQLite) {
  std::string path = file("random.db");
  {
    std::ofstream out(path, std::ios::binary);
    auto noise = bytes(8192, 7);
    out.write(reinterpret_cast<const char *>(noise.data()), noise.size());
  }
  std::string error = openError(path);
  EXPECT_NE(error.find(path + ": error: is not a SQLite database"),
            std::string::npos)
      << error;
  std::string text = file("notes.txt");
  std::ofstream(text) << "hello";
  EXPECT_NE(openError(text).find("is not a SQLite database"), std::string::npos);
}

TEST_F(KernelDatabaseTest, RefusesATruncatedDatabase) {
  std::string path = file("kernels.db");
  {
    KernelDatabase db = openOrDie(path);
    for (int i = 0; i < 40; ++i) {
      KernelKey k = key();
      k.fingerprint = "k_" + std::to_string(i);
      CandidateRecord r = record(k, "hash" + std::to_string(i));
      r.artifact = bytes(6000, i);
      ASSERT_TRUE(db.put(k, r));
    }
  } // the last connection checkpoints the WAL into the file
  ASSERT_FALSE(fs::exists(path + "-wal"));
  fs::resize_file(path, fs::file_size(path) / 2);
  std::string error = openError(path);
  EXPECT_EQ(error.rfind(path + ": error: ", 0), 0u) << error;
  EXPECT_TRUE(error.find("is damaged") != std::string::npos ||
              error.find("fails its integrity check") != std::string::npos)
      << error;
}

TEST_F(KernelDatabaseTest, RefusesForeignSQLiteDatabases) {
  std::string plain = file("app.db");
  rawExec(plain, "CREATE TABLE users (name TEXT)");
  std::string error = openError(plain);
  EXPECT_NE(error.find("not a dice kernel database"), std::string::npos) << error;
  EXPECT_NE(error.find("users"), std::string::npos) << error;

  std::string other = file("other.db");
  rawExec(other, "PRAGMA application_id = 1234; CREATE TABLE t (x)");
  error = openError(other);
  EXPECT_NE(error.find("another application"), std::string::npos) << error;

  // Ours in name, but someone added a table: not trusted either.
  std::string altered = file("altered.db");
  openOrDie(altered);
  rawExec(altered, "CREATE TABLE extra (x)");
  error = openError(altered);
  EXPECT_NE(error.find("'extra'"), std::string::npos) << error;

  // The foreign file was left as it was (no WAL switch, no schema).
  sqlite3 *db = nullptr;
  ASSERT_EQ(sqlite3_open(plain.c_str(), &db), SQLITE_OK);
  sqlite3_stmt *stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &stmt, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char *>(sqlite3_column_text(stmt, 0)),
               "delete");
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

TEST_F(KernelDatabaseTest, RefusesANewerSchemaVersion) {
  std::string path = file("kernels.db");
  openOrDie(path);
  std::string sql = "PRAGMA user_version = " +
                    std::to_string(kKernelDatabaseSchemaVersion + 1);
  rawExec(path, sql.c_str());
  std::string error = openError(path);
  EXPECT_NE(error.find(path + ": error: has kernel database schema version " +
                       std::to_string(kKernelDatabaseSchemaVersion + 1) +
                       ", newer than"),
            std::string::npos)
      << error;
}

TEST_F(KernelDatabaseTest, RefusesDatabasesOfPrintedMLIRFingerprints) {
  // A version 1 file as that dice wrote it: its keys hashed printed MLIR.
  std::string path = file("old.db");
  rawExec(path, R"sql(
    CREATE TABLE candidates (fingerprint TEXT NOT NULL, gpu_arch TEXT NOT NULL,
      scaffold_version INTEGER NOT NULL, model_id TEXT NOT NULL,
      candidate_hash TEXT NOT NULL, source TEXT NOT NULL,
      verdict_json TEXT NOT NULL, status TEXT NOT NULL, speedup REAL,
      artifact BLOB, created_at INTEGER NOT NULL,
      UNIQUE (fingerprint, gpu_arch, scaffold_version, model_id, candidate_hash));
    CREATE TABLE choices (fingerprint TEXT NOT NULL, gpu_arch TEXT NOT NULL,
      scaffold_version INTEGER NOT NULL, model_id TEXT NOT NULL,
      candidate_hash TEXT NOT NULL, chosen_at INTEGER NOT NULL,
      PRIMARY KEY (fingerprint, gpu_arch, scaffold_version, model_id));
    PRAGMA application_id = 1145652037;
    PRAGMA user_version = 1;
  )sql");
  std::string error = openError(path);
  EXPECT_NE(error.find(path + ": error: has kernel database schema version 1"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("fingerprint scheme " +
                       std::to_string(kFingerprintScheme)),
            std::string::npos)
      << error;
}

TEST_F(KernelDatabaseTest, UpgradesAVersion2DatabaseKeepingEveryRow) {
  // A version 3 file, copied into the version 2 layout (no prompt_template)
  // as that dice wrote it.
  std::string current = file("current.db"), old = file("old.db");
  KernelKey k = key();
  {
    KernelDatabase db = openOrDie(current);
    ASSERT_TRUE(db.put(k, record(k, "aaaa")));
    CandidateRecord withLibrary = record(k, "bbbb", VerdictStatus::Slow);
    withLibrary.artifact = bytes(64, 7);
    ASSERT_TRUE(db.put(k, withLibrary));
    ASSERT_TRUE(db.choose(k, "aaaa"));
  }
  std::string sql = R"sql(
    CREATE TABLE candidates (fingerprint TEXT NOT NULL,
      fingerprint_scheme INTEGER NOT NULL, gpu_arch TEXT NOT NULL,
      scaffold_version INTEGER NOT NULL, model_id TEXT NOT NULL,
      candidate_hash TEXT NOT NULL, source TEXT NOT NULL,
      verdict_json TEXT NOT NULL, status TEXT NOT NULL, speedup REAL,
      artifact BLOB, created_at INTEGER NOT NULL,
      UNIQUE (fingerprint, fingerprint_scheme, gpu_arch, scaffold_version,
              model_id, candidate_hash));
    CREATE TABLE choices (fingerprint TEXT NOT NULL,
      fingerprint_scheme INTEGER NOT NULL, gpu_arch TEXT NOT NULL,
      scaffold_version INTEGER NOT NULL, model_id TEXT NOT NULL,
      candidate_hash TEXT NOT NULL, chosen_at INTEGER NOT NULL,
      PRIMARY KEY (fingerprint, fingerprint_scheme, gpu_arch, scaffold_version,
                   model_id));
    ATTACH DATABASE ')sql" + current + R"sql(' AS src;
    INSERT INTO candidates SELECT fingerprint, fingerprint_scheme, gpu_arch,
      scaffold_version, model_id, candidate_hash, source, verdict_json, status,
      speedup, artifact, created_at FROM src.candidates ORDER BY rowid;
    INSERT INTO choices SELECT fingerprint, fingerprint_scheme, gpu_arch,
      scaffold_version, model_id, candidate_hash, chosen_at FROM src.choices;
    DETACH DATABASE src;
    PRAGMA application_id = 1145652037;
    PRAGMA user_version = 2;
  )sql";
  rawExec(old, sql.c_str());

  // Read-only, it cannot be upgraded: the error says how.
  auto readOnly = KernelDatabase::open(old, OpenMode::ReadOnly);
  ASSERT_FALSE(readOnly);
  EXPECT_NE(readOnly.error().message.find("schema version 2"), std::string::npos);
  EXPECT_NE(readOnly.error().message.find("open it once for writing"),
            std::string::npos);

  {
    KernelDatabase db = openOrDie(old);
    // Every row is there, in its order, under the built-in wording.
    auto records = db.candidates(k);
    ASSERT_TRUE(records);
    ASSERT_EQ(records->size(), 2u);
    EXPECT_EQ((*records)[0].candidateHash, "aaaa");
    EXPECT_EQ((*records)[1].candidateHash, "bbbb");
    EXPECT_EQ((*records)[1].status, VerdictStatus::Slow);
    EXPECT_EQ(*db.artifact(k, "bbbb"), std::optional(bytes(64, 7)));
    auto choice = db.chosen(k);
    ASSERT_TRUE(choice && *choice);
    EXPECT_EQ((*choice)->candidateHash, "aaaa");
    KernelKey otherWording = k;
    otherWording.promptTemplate = "0123456789abcdef";
    EXPECT_TRUE(db.candidates(otherWording)->empty());
  }
  // Upgraded for good: it now opens read-only too.
  KernelDatabase again = openOrDie(old, OpenMode::ReadOnly);
  EXPECT_EQ(again.candidates(k)->size(), 2u);
}

TEST_F(KernelDatabaseTest, ReadOnlyNeedsAnExistingDatabase) {
  std::string path = file("missing.db");
  auto db = KernelDatabase::open(path, OpenMode::ReadOnly);
  ASSERT_FALSE(db);
  EXPECT_NE(db.error().format().find("no such kernel database"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(KernelDatabaseTest, ConcurrentWritersLoseNothing) {
  // Children race to create the schema too: none exists before they start.
  std::string path = file("kernels.db");
  constexpr int kWriters = 3, kRecords = 60;
  KernelKey k = key();
  std::vector<pid_t> children;
  for (int w = 0; w < kWriters; ++w) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto db = KernelDatabase::open(path);
      if (!db) {
        std::fprintf(stderr, "%s\n", db.error().format().c_str());
        ::_exit(2);
      }
      for (int i = 0; i < kRecords; ++i) {
        std::string hash = "w" + std::to_string(w) + "-" + std::to_string(i);
        if (Status stored = db->put(k, record(k, hash)); !stored) {
          std::fprintf(stderr, "%s\n", stored.error().format().c_str());
          ::_exit(3);
        }
        if (i % 10 == 0 && (!db->candidates(k) || !db->choose(k, hash)))
          ::_exit(4);
      }
      ::_exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  KernelDatabase db = openOrDie(path); // runs quick_check
  auto records = db.candidates(k);
  ASSERT_TRUE(records);
  EXPECT_EQ(records->size(), size_t(kWriters * kRecords));
  std::set<std::string> hashes;
  for (const auto &r : *records)
    hashes.insert(r.candidateHash);
  EXPECT_EQ(hashes.size(), size_t(kWriters * kRecords));
  EXPECT_TRUE(*db.chosen(k));
}

TEST_F(KernelDatabaseTest, FirstOpenWaitsForAnotherProcessCreatingTheFile) {
  // Another connection holds the empty file's write lock, as a concurrent
  // opener creating the schema does. SQLite answers the switch to WAL
  // "busy" at once there, without its busy handler: the open must wait for
  // the lock, then create the database.
  std::string path = file("kernels.db");
  sqlite3 *other = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  std::atomic<bool> released{false};
  std::thread release([other, &released] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    released = true;
    sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  });
  auto db = KernelDatabase::open(path);
  bool openedAfterTheRelease = released;
  release.join();
  sqlite3_close(other);
  ASSERT_TRUE(db) << db.error().format();
  EXPECT_TRUE(openedAfterTheRelease);
  ASSERT_TRUE(db->put(key(), record(key(), "after-the-wait")));
  EXPECT_EQ(db->candidates(key())->size(), 1u);
}

TEST_F(KernelDatabaseTest, FirstOpenGivesUpAfterTheBusyTimeout) {
  std::string path = file("kernels.db");
  sqlite3 *other = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  auto db = KernelDatabase::open(path, OpenMode::ReadWrite, /*busyTimeoutMs=*/200);
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  ASSERT_FALSE(db);
  std::string error = db.error().format();
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("locked"), std::string::npos) << error;
}

TEST_F(KernelDatabaseTest, ReadersSeeARequestsCandidatesAllOrNone) {
  std::string path = file("kernels.db");
  openOrDie(path); // the schema, before the writer starts
  constexpr int kKeys = 200, kPerKey = 5;
  auto keyOf = [](int i) {
    KernelKey k = key();
    k.fingerprint = "k_" + std::to_string(i);
    return k;
  };
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto db = KernelDatabase::open(path);
    if (!db)
      ::_exit(2);
    for (int i = 0; i < kKeys; ++i) {
      KernelKey k = keyOf(i);
      std::vector<CandidateRecord> set;
      for (int j = 0; j < kPerKey; ++j)
        set.push_back(record(k, "h" + std::to_string(j)));
      if (!db->putAll(k, set))
        ::_exit(3);
    }
    ::_exit(0);
  }
  KernelDatabase db = openOrDie(path, OpenMode::ReadOnly);
  std::set<size_t> seen;
  for (int done = 0; done == 0;) {
    int status = 0;
    done = ::waitpid(pid, &status, WNOHANG);
    ASSERT_GE(done, 0);
    if (done) {
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    for (int i = 0; i < kKeys; ++i) {
      auto records = db.candidates(keyOf(i));
      ASSERT_TRUE(records) << records.error().format();
      seen.insert(records->size());
    }
  }
  for (size_t n : seen)
    EXPECT_TRUE(n == 0 || n == size_t(kPerKey)) << n << " of " << kPerKey;
  // And once the writer is done, nothing is missing.
  for (int i = 0; i < kKeys; ++i)
    EXPECT_EQ(db.candidates(keyOf(i))->size(), size_t(kPerKey)) << i;
}
