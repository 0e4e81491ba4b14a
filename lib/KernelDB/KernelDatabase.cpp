//===- KernelDatabase.cpp - the SQLite kernel database --------------------===//

#include "dice/KernelDB/KernelDatabase.h"
#include "dice/Support/File.h"

#include <sqlite3.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <set>
#include <sys/stat.h>
#include <thread>

namespace dice {

namespace {

// Tables the schema creates; any other table makes a file foreign.
const char *const kTables[] = {"candidates", "choices"};

// Version 3 (2 had no prompt_template: every prompt was the built-in
// wording; 1 had no fingerprint_scheme: its fingerprints hashed printed
// MLIR). Candidates keep their rowid, so candidates() returns them in the
// order first stored and a re-verification (upsert) keeps its place.
const char *const kSchema = R"sql(
CREATE TABLE candidates (
  fingerprint      TEXT    NOT NULL,
  fingerprint_scheme INTEGER NOT NULL,
  gpu_arch         TEXT    NOT NULL,
  scaffold_version INTEGER NOT NULL,
  model_id         TEXT    NOT NULL,
  prompt_template  TEXT    NOT NULL,
  candidate_hash   TEXT    NOT NULL,
  source           TEXT    NOT NULL,
  verdict_json     TEXT    NOT NULL,
  status           TEXT    NOT NULL,
  speedup          REAL,
  artifact         BLOB,
  created_at       INTEGER NOT NULL,
  UNIQUE (fingerprint, fingerprint_scheme, gpu_arch, scaffold_version,
          model_id, prompt_template, candidate_hash)
);
CREATE TABLE choices (
  fingerprint      TEXT    NOT NULL,
  fingerprint_scheme INTEGER NOT NULL,
  gpu_arch         TEXT    NOT NULL,
  scaffold_version INTEGER NOT NULL,
  model_id         TEXT    NOT NULL,
  prompt_template  TEXT    NOT NULL,
  candidate_hash   TEXT    NOT NULL,
  chosen_at        INTEGER NOT NULL,
  PRIMARY KEY (fingerprint, fingerprint_scheme, gpu_arch, scaffold_version,
               model_id, prompt_template)
);
)sql";

// Version 2 -> 3: the same rows, under the built-in wording (''). The new
// tables are made from kSchema, the rows copied column by column, so the
// rowids (the candidates' order) stay.
const char *const kUpgradeFrom2 = R"sql(
ALTER TABLE candidates RENAME TO candidates_v2;
ALTER TABLE choices RENAME TO choices_v2;
)sql";
const char *const kCopyFrom2 = R"sql(
INSERT INTO candidates (rowid, fingerprint, fingerprint_scheme, gpu_arch,
  scaffold_version, model_id, prompt_template, candidate_hash, source,
  verdict_json, status, speedup, artifact, created_at)
  SELECT rowid, fingerprint, fingerprint_scheme, gpu_arch, scaffold_version,
    model_id, '', candidate_hash, source, verdict_json, status, speedup,
    artifact, created_at FROM candidates_v2;
INSERT INTO choices (fingerprint, fingerprint_scheme, gpu_arch,
  scaffold_version, model_id, prompt_template, candidate_hash, chosen_at)
  SELECT fingerprint, fingerprint_scheme, gpu_arch, scaffold_version,
    model_id, '', candidate_hash, chosen_at FROM choices_v2;
DROP TABLE candidates_v2;
DROP TABLE choices_v2;
PRAGMA user_version = 3;
)sql";

// The key's parameters: ?1-?4 and, numbered apart so the statements' own
// parameters keep theirs, ?20 and ?21.
const char *const kKeyMatch = "fingerprint = ?1 AND gpu_arch = ?2 AND "
                              "scaffold_version = ?3 AND model_id = ?4 AND "
                              "fingerprint_scheme = ?20 AND "
                              "prompt_template = ?21";

/// A prepared statement, finalized on every path out.
class Statement {
public:
  Statement(sqlite3 *db, const std::string &sql) {
    rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr);
  }
  ~Statement() { sqlite3_finalize(stmt); }
  Statement(const Statement &) = delete;
  Statement &operator=(const Statement &) = delete;

  bool prepared() const { return rc == SQLITE_OK; }
  int code() const { return rc; }

  void bind(int index, const std::string &text) {
    sqlite3_bind_text(stmt, index, text.data(), static_cast<int>(text.size()),
                      SQLITE_TRANSIENT);
  }
  void bind(int index, int64_t value) { sqlite3_bind_int64(stmt, index, value); }
  void bind(int index, const std::optional<double> &value) {
    if (value)
      sqlite3_bind_double(stmt, index, *value);
    else
      sqlite3_bind_null(stmt, index);
  }
  void bind(int index, const std::optional<std::vector<uint8_t>> &bytes) {
    if (bytes)
      sqlite3_bind_blob64(stmt, index, bytes->data(), bytes->size(),
                          SQLITE_TRANSIENT);
    else
      sqlite3_bind_null(stmt, index);
  }
  void bindKey(const KernelKey &key) {
    bind(1, key.fingerprint);
    bind(2, key.gpuArch);
    bind(3, static_cast<int64_t>(key.scaffoldVersion));
    bind(4, key.modelId);
    bind(20, static_cast<int64_t>(key.fingerprintScheme));
    bind(21, key.promptTemplate);
  }

  /// Makes the statement ready to run again, its bindings kept.
  void reset() { sqlite3_reset(stmt); }

  /// SQLITE_ROW, SQLITE_DONE or an error code.
  int step() {
    rc = sqlite3_step(stmt);
    return rc;
  }

  std::string text(int column) const {
    const auto *p = sqlite3_column_text(stmt, column);
    return p ? std::string(reinterpret_cast<const char *>(p),
                           sqlite3_column_bytes(stmt, column))
             : std::string();
  }
  int64_t integer(int column) const { return sqlite3_column_int64(stmt, column); }
  bool isNull(int column) const {
    return sqlite3_column_type(stmt, column) == SQLITE_NULL;
  }
  std::optional<double> real(int column) const {
    if (isNull(column))
      return std::nullopt;
    return sqlite3_column_double(stmt, column);
  }
  std::optional<std::vector<uint8_t>> blob(int column) const {
    if (isNull(column))
      return std::nullopt;
    const auto *p = static_cast<const uint8_t *>(sqlite3_column_blob(stmt, column));
    int n = sqlite3_column_bytes(stmt, column);
    return p ? std::vector<uint8_t>(p, p + n) : std::vector<uint8_t>();
  }

private:
  sqlite3_stmt *stmt = nullptr;
  int rc;
};

std::string sqliteMessage(sqlite3 *db) {
  if (!db)
    return "out of memory";
  std::string message = sqlite3_errmsg(db);
  // The check on open (quick_check) does not compare indexes with their
  // tables: a file damaged there opens, and its first query says so.
  if ((sqlite3_extended_errcode(db) & 0xff) == SQLITE_CORRUPT)
    message += " (the file is damaged: `PRAGMA integrity_check` says where; "
               "move it away to start a new database)";
  return message;
}

/// Runs statements that return nothing of interest.
bool exec(sqlite3 *db, const char *sql) {
  return sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
}

/// Puts the file in WAL mode. The switch needs the file to itself, and SQLite
/// does not call the busy handler for it when another connection holds a
/// lock (waiting there could deadlock), so a file being created or written
/// by other processes answers SQLITE_BUSY at once: retry until the busy
/// timeout is spent.
bool switchToWal(sqlite3 *db, int busyTimeoutMs) {
  auto start = std::chrono::steady_clock::now();
  for (int attempt = 0;; ++attempt) {
    Statement journal(db, "PRAGMA journal_mode = WAL");
    int rc = journal.prepared() ? journal.step() : journal.code();
    if (rc == SQLITE_ROW)
      return journal.text(0) == "wal";
    int code = rc & 0xff;
    auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    if ((code != SQLITE_BUSY && code != SQLITE_LOCKED) ||
        waited.count() >= busyTimeoutMs)
      return false;
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::min(1 + attempt, 20)));
  }
}

/// A BEGIN IMMEDIATE transaction, rolled back unless committed.
class WriteTransaction {
public:
  explicit WriteTransaction(sqlite3 *db) : db(db) {
    began = exec(db, "BEGIN IMMEDIATE");
  }
  ~WriteTransaction() {
    if (began && !committed)
      exec(db, "ROLLBACK");
  }
  bool active() const { return began; }
  bool commit() {
    committed = exec(db, "COMMIT");
    return committed;
  }

private:
  sqlite3 *db;
  bool began = false;
  bool committed = false;
};

int64_t now() { return static_cast<int64_t>(std::time(nullptr)); }

/// First bytes of the file: "" when it is missing or empty (a new database),
/// otherwise what is there, up to the 16-byte SQLite magic.
std::optional<std::string> fileHead(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return std::nullopt;
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return std::string();
  char buffer[16];
  size_t n = std::fread(buffer, 1, sizeof buffer, f);
  std::fclose(f);
  return std::string(buffer, n);
}

std::string hex(int32_t value) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "0x%08x", static_cast<uint32_t>(value));
  return buffer;
}

/// What the file says it is.
struct Identity {
  int64_t applicationId = 0;
  int64_t userVersion = 0;
  std::vector<std::string> tables; ///< user tables, sqlite_* left out
};

std::optional<Identity> readIdentity(sqlite3 *db) {
  Identity id;
  Statement app(db, "PRAGMA application_id");
  if (!app.prepared() || app.step() != SQLITE_ROW)
    return std::nullopt;
  id.applicationId = app.integer(0);
  Statement version(db, "PRAGMA user_version");
  if (!version.prepared() || version.step() != SQLITE_ROW)
    return std::nullopt;
  id.userVersion = version.integer(0);
  Statement tables(db, "SELECT name FROM sqlite_schema WHERE type = 'table' "
                       "AND name NOT LIKE 'sqlite_%' ORDER BY name");
  if (!tables.prepared())
    return std::nullopt;
  int rc;
  while ((rc = tables.step()) == SQLITE_ROW)
    id.tables.push_back(tables.text(0));
  if (rc != SQLITE_DONE)
    return std::nullopt;
  return id;
}

bool isNew(const Identity &id) {
  return id.applicationId == 0 && id.userVersion == 0 && id.tables.empty();
}

/// Empty when `id` is a kernel database this code can read; otherwise why not.
std::string checkIdentity(const Identity &id) {
  if (id.applicationId != kKernelDatabaseApplicationId) {
    if (id.applicationId != 0)
      return "is a SQLite database of another application (application_id " +
             hex(static_cast<int32_t>(id.applicationId)) + ", expected " +
             hex(kKernelDatabaseApplicationId) + "), not a dice kernel database";
    return "is a SQLite database but not a dice kernel database "
           "(no dice application_id; tables: " +
           [&] {
             std::string list;
             for (const auto &t : id.tables)
               list += (list.empty() ? "" : ", ") + t;
             return list.empty() ? std::string("none") : list;
           }() +
           ")";
  }
  if (id.userVersion > kKernelDatabaseSchemaVersion)
    return "has kernel database schema version " +
           std::to_string(id.userVersion) + ", newer than the " +
           std::to_string(kKernelDatabaseSchemaVersion) +
           " this dice understands; use a newer dice or another database path";
  if (id.userVersion == 1)
    return "has kernel database schema version 1, whose fingerprints hashed "
           "printed MLIR (fingerprint scheme 1); this dice keys kernels by "
           "fingerprint scheme " +
           std::to_string(kFingerprintScheme) +
           ", so none of its kernels would be found, and a match could be "
           "wrong: move the file away or use another database path";
  if (id.userVersion < kKernelDatabaseSchemaVersion)
    return "has kernel database schema version " +
           std::to_string(id.userVersion) + ", which this dice cannot read";
  std::set<std::string> expected(std::begin(kTables), std::end(kTables));
  for (const auto &t : id.tables)
    if (!expected.count(t))
      return "has a table '" + t + "' that is not part of a dice kernel "
             "database; refusing a foreign or altered file";
  std::set<std::string> present(id.tables.begin(), id.tables.end());
  for (const auto &t : expected)
    if (!present.count(t))
      return "lacks the kernel database table '" + t + "'; the file is damaged";
  return "";
}

CandidateRecord readCandidate(const Statement &row) {
  // Columns: candidate_hash, source, verdict_json, status, speedup,
  // artifact IS NOT NULL, created_at.
  CandidateRecord record;
  record.candidateHash = row.text(0);
  record.source = row.text(1);
  record.verdictJson = row.text(2);
  record.status =
      parseVerdictStatus(row.text(3)).value_or(VerdictStatus::Unverified);
  record.speedup = row.real(4);
  record.hasArtifact = row.integer(5) != 0;
  record.createdAt = row.integer(6);
  return record;
}

const char *const kCandidateColumns =
    "candidate_hash, source, verdict_json, status, speedup, "
    "artifact IS NOT NULL, created_at";

} // namespace

void KernelDatabase::Closer::operator()(sqlite3 *db) const {
  sqlite3_close_v2(db);
}

KernelDatabase::KernelDatabase(std::string path, sqlite3 *db)
    : filePath(std::move(path)), db(db) {}
KernelDatabase::KernelDatabase(KernelDatabase &&) noexcept = default;
KernelDatabase &KernelDatabase::operator=(KernelDatabase &&) noexcept = default;
KernelDatabase::~KernelDatabase() = default;

Error KernelDatabase::errorOf(const std::string &what) const {
  return {filePath, what + ": " + sqliteMessage(db.get())};
}

Result<KernelDatabase> KernelDatabase::open(const std::string &path,
                                            OpenMode mode, int busyTimeoutMs) {
  auto fail = [&](std::string message) -> Result<KernelDatabase> {
    return Error{path, std::move(message)};
  };

  // SQLite would open anything and complain at the first query; say what
  // the file is before handing it over.
  std::optional<std::string> head = fileHead(path);
  if (!head && mode == OpenMode::ReadOnly)
    return fail("no such kernel database");
  if (head && !head->empty() &&
      (head->size() < 16 || std::memcmp(head->data(), "SQLite format 3", 16)))
    return fail("is not a SQLite database (a dice kernel database is one)");

  // SQLite creates the file, not its folder: a dice.toml's default
  // `.dice/kernels.db` must open in a project that has no `.dice/` yet.
  if (size_t slash = path.rfind('/');
      !head && mode != OpenMode::ReadOnly && slash != std::string::npos && slash > 0 &&
      !makeDirectories(path.substr(0, slash)))
    return fail("cannot create its folder " + path.substr(0, slash) + ": " +
                std::strerror(errno));

  sqlite3 *raw = nullptr;
  int flags = mode == OpenMode::ReadOnly
                  ? SQLITE_OPEN_READONLY
                  : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  KernelDatabase database(path, raw);
  if (rc != SQLITE_OK)
    return database.errorOf("cannot open");
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, busyTimeoutMs);

  std::optional<Identity> identity = readIdentity(raw);
  if (!identity) {
    int code = sqlite3_errcode(raw) & 0xff;
    if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB)
      return fail(std::string("is damaged (") + sqlite3_errmsg(raw) +
                  "); move it away to start a new database");
    return database.errorOf("cannot read the database header");
  }

  if (isNew(*identity)) {
    if (mode == OpenMode::ReadOnly)
      return fail("is empty, not a dice kernel database");
    // WAL before the first table, so a concurrent opener never has to
    // switch journal modes under a reader.
    if (!switchToWal(raw, busyTimeoutMs))
      return database.errorOf("cannot switch to WAL");
    WriteTransaction transaction(raw);
    if (!transaction.active())
      return database.errorOf("cannot lock to create the schema");
    // Another process may have created it while this one waited.
    identity = readIdentity(raw);
    if (!identity)
      return database.errorOf("cannot read the database header");
    if (isNew(*identity)) {
      std::string pragmas =
          "PRAGMA application_id = " +
          std::to_string(kKernelDatabaseApplicationId) +
          "; PRAGMA user_version = " +
          std::to_string(kKernelDatabaseSchemaVersion) + ";";
      if (!exec(raw, kSchema) || !exec(raw, pragmas.c_str()))
        return database.errorOf("cannot create the schema");
      if (!transaction.commit())
        return database.errorOf("cannot commit the schema");
      identity = readIdentity(raw);
      if (!identity)
        return database.errorOf("cannot read the database header");
    }
  }

  if (identity->applicationId == kKernelDatabaseApplicationId &&
      identity->userVersion == 2) {
    Identity asCurrent = *identity;
    asCurrent.userVersion = kKernelDatabaseSchemaVersion;
    if (std::string problem = checkIdentity(asCurrent); !problem.empty())
      return fail(problem);
    if (mode == OpenMode::ReadOnly)
      return fail("has kernel database schema version 2 (before prompt "
                  "templates joined the key); open it once for writing (any "
                  "dice-opt run, or dice-db import) to upgrade it to version " +
                  std::to_string(kKernelDatabaseSchemaVersion));
    WriteTransaction transaction(raw);
    if (!transaction.active())
      return database.errorOf("cannot lock to upgrade the schema");
    identity = readIdentity(raw);
    if (!identity)
      return database.errorOf("cannot read the database header");
    if (identity->userVersion == 2) {
      if (!exec(raw, kUpgradeFrom2) || !exec(raw, kSchema) ||
          !exec(raw, kCopyFrom2))
        return database.errorOf("cannot upgrade the schema from version 2");
      if (!transaction.commit())
        return database.errorOf("cannot commit the schema upgrade");
      identity = readIdentity(raw);
      if (!identity)
        return database.errorOf("cannot read the database header");
    }
  }

  std::string problem = checkIdentity(*identity);
  if (!problem.empty())
    return fail(problem);

  if (mode == OpenMode::ReadWrite) {
    if (!switchToWal(raw, busyTimeoutMs))
      return database.errorOf("cannot switch to WAL");
    exec(raw, "PRAGMA synchronous = NORMAL");
  }

  // Never half-trust a file: a damaged page refuses the whole database.
  Statement check(raw, "PRAGMA quick_check");
  if (!check.prepared())
    return database.errorOf("cannot check integrity");
  rc = check.step();
  if (rc != SQLITE_ROW)
    return database.errorOf("fails its integrity check");
  std::string verdict = check.text(0);
  if (verdict != "ok")
    return fail("fails its integrity check (" + verdict +
                "); move it away to start a new database");
  return database;
}

Status KernelDatabase::checkRecord(const KernelKey &key,
                                   const CandidateRecord &record) const {
  if (record.candidateHash.empty())
    return Error{filePath,
                 "candidate of " + key.fingerprint + " has no candidate hash"};
  Result<Verdict> verdict = Verdict::fromJson(record.verdictJson);
  if (!verdict)
    return Error{filePath, "verdict of candidate " + record.candidateHash +
                               " is invalid: " + verdict.error().message};
  if (verdict->fingerprint != key.fingerprint ||
      verdict->candidateHash != record.candidateHash ||
      verdict->status != record.status)
    return Error{filePath,
                 "verdict of candidate " + record.candidateHash +
                     " disagrees with its record (fingerprint, candidate "
                     "hash or status)"};
  return {};
}

Status KernelDatabase::put(const KernelKey &key,
                           const CandidateRecord &record) {
  return putAll(key, std::span<const CandidateRecord>(&record, 1));
}

Status KernelDatabase::putAll(const KernelKey &key,
                              std::span<const CandidateRecord> records) {
  for (const CandidateRecord &record : records)
    if (Status valid = checkRecord(key, record); !valid)
      return valid;

  WriteTransaction transaction(db.get());
  if (!transaction.active())
    return errorOf("cannot begin a write");
  Statement insert(
      db.get(),
      "INSERT INTO candidates (fingerprint, gpu_arch, scaffold_version, "
      "model_id, fingerprint_scheme, prompt_template, candidate_hash, source, "
      "verdict_json, status, speedup, artifact, created_at) VALUES (?1, ?2, "
      "?3, ?4, ?20, ?21, ?5, ?6, ?7, ?8, ?9, ?10, ?11) ON CONFLICT "
      "(fingerprint, fingerprint_scheme, gpu_arch, scaffold_version, model_id, "
      "prompt_template, candidate_hash) DO UPDATE SET source = "
      "excluded.source, verdict_json = "
      "excluded.verdict_json, status = excluded.status, speedup = "
      "excluded.speedup, artifact = excluded.artifact, created_at = "
      "excluded.created_at");
  if (!insert.prepared())
    return errorOf("cannot prepare a write");
  int64_t createdAt = now();
  for (const CandidateRecord &record : records) {
    insert.reset();
    insert.bindKey(key);
    insert.bind(5, record.candidateHash);
    insert.bind(6, record.source);
    insert.bind(7, record.verdictJson);
    insert.bind(8, std::string(verdictStatusName(record.status)));
    insert.bind(9, record.speedup);
    insert.bind(10, record.artifact);
    insert.bind(11, record.createdAt ? record.createdAt : createdAt);
    if (insert.step() != SQLITE_DONE)
      return errorOf("cannot store candidate " + record.candidateHash);
  }
  if (!transaction.commit())
    return errorOf(records.size() == 1
                       ? "cannot commit candidate " + records[0].candidateHash
                       : "cannot commit the candidates of " + key.fingerprint);
  return {};
}

Result<std::vector<CandidateRecord>>
KernelDatabase::candidates(const KernelKey &key) const {
  Statement select(db.get(), std::string("SELECT ") + kCandidateColumns +
                                 " FROM candidates WHERE " + kKeyMatch +
                                 " ORDER BY rowid");
  if (!select.prepared())
    return errorOf("cannot prepare a read");
  select.bindKey(key);
  std::vector<CandidateRecord> records;
  int rc;
  while ((rc = select.step()) == SQLITE_ROW)
    records.push_back(readCandidate(select));
  if (rc != SQLITE_DONE)
    return errorOf("cannot read the candidates of " + key.fingerprint);
  return records;
}

Status KernelDatabase::choose(const KernelKey &key,
                              const std::string &candidateHash) {
  WriteTransaction transaction(db.get());
  if (!transaction.active())
    return errorOf("cannot begin a write");
  Statement exists(db.get(), std::string("SELECT 1 FROM candidates WHERE ") +
                                 kKeyMatch + " AND candidate_hash = ?5");
  if (!exists.prepared())
    return errorOf("cannot prepare a read");
  exists.bindKey(key);
  exists.bind(5, candidateHash);
  int rc = exists.step();
  if (rc == SQLITE_DONE)
    return Error{filePath, "cannot choose candidate " + candidateHash + " of " +
                               key.fingerprint +
                               ": no such candidate under its key"};
  if (rc != SQLITE_ROW)
    return errorOf("cannot read the candidates of " + key.fingerprint);
  Statement upsert(
      db.get(),
      "INSERT INTO choices (fingerprint, gpu_arch, scaffold_version, model_id, "
      "fingerprint_scheme, prompt_template, candidate_hash, chosen_at) VALUES "
      "(?1, ?2, ?3, ?4, ?20, ?21, ?5, ?6) ON CONFLICT (fingerprint, "
      "fingerprint_scheme, gpu_arch, scaffold_version, model_id, "
      "prompt_template) DO UPDATE SET "
      "candidate_hash = excluded.candidate_hash, chosen_at = "
      "excluded.chosen_at");
  if (!upsert.prepared())
    return errorOf("cannot prepare a write");
  upsert.bindKey(key);
  upsert.bind(5, candidateHash);
  upsert.bind(6, now());
  if (upsert.step() != SQLITE_DONE)
    return errorOf("cannot record the choice for " + key.fingerprint);
  if (!transaction.commit())
    return errorOf("cannot commit the choice for " + key.fingerprint);
  return {};
}

Result<std::optional<CandidateRecord>>
KernelDatabase::chosen(const KernelKey &key) const {
  Statement select(
      db.get(),
      std::string("SELECT ") + kCandidateColumns +
          " FROM candidates WHERE " + kKeyMatch +
          " AND candidate_hash = (SELECT candidate_hash FROM choices WHERE " +
          kKeyMatch + ")");
  if (!select.prepared())
    return errorOf("cannot prepare a read");
  select.bindKey(key);
  int rc = select.step();
  if (rc == SQLITE_DONE)
    return std::optional<CandidateRecord>();
  if (rc != SQLITE_ROW)
    return errorOf("cannot read the choice for " + key.fingerprint);
  return std::optional<CandidateRecord>(readCandidate(select));
}

Result<std::optional<std::vector<uint8_t>>>
KernelDatabase::artifact(const KernelKey &key,
                         const std::string &candidateHash) const {
  Statement select(db.get(), std::string("SELECT artifact FROM candidates "
                                         "WHERE ") +
                                 kKeyMatch + " AND candidate_hash = ?5");
  if (!select.prepared())
    return errorOf("cannot prepare a read");
  select.bindKey(key);
  select.bind(5, candidateHash);
  int rc = select.step();
  if (rc == SQLITE_DONE)
    return Error{filePath, "no candidate " + candidateHash + " of " +
                               key.fingerprint + " under its key"};
  if (rc != SQLITE_ROW)
    return errorOf("cannot read the artifact of " + candidateHash);
  return select.blob(0);
}

} // namespace dice
