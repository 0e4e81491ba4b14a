//===- KernelDatabase.h - verified kernels, keyed by request ----*- C++ -*-===//
//
// The kernel database: every candidate of a kernel request with its verdict
// and, where built, its kernel library, plus resolve's choice among them. A
// warm database makes a rebuild reproducible and fast with no model call.
//
// One SQLite file (WAL, busy timeout, writes in BEGIN IMMEDIATE
// transactions), so several dice-opt processes can share it. Plain C++ and
// the SQLite C API: no LLVM, no LibTorch, and nothing throws, because the
// compiler core calls it from -fno-exceptions code.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_KERNELDB_KERNELDATABASE_H
#define DICE_KERNELDB_KERNELDATABASE_H

#include "dice/Reference/Fingerprint.h"
#include "dice/Support/Result.h"
#include "dice/VerifierCore/Verdict.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

struct sqlite3;

namespace dice {

/// `PRAGMA application_id` of every kernel database: "DICE" in ASCII.
inline constexpr int32_t kKernelDatabaseApplicationId = 0x44494345;
/// `PRAGMA user_version`: the layout of the tables. A file with a newer
/// version is refused rather than half understood.
inline constexpr int kKernelDatabaseSchemaVersion = 3;

/// What a kernel was made for. Candidates under one key are interchangeable;
/// a different GPU architecture, scaffold, prompt wording or model makes a
/// different key.
struct KernelKey {
  std::string fingerprint; ///< the request's fingerprint ("3f9a0c1d2e4b5a69")
  std::string gpuArch;     ///< e.g. "sm_90"
  int scaffoldVersion = 0; ///< kScaffoldVersion of the compiler that asked
  std::string modelId;     ///< the model that wrote the candidates
  /// PromptTemplates::identity of the prompts' wording; empty for the
  /// built-in templates.
  std::string promptTemplate;
  /// How `fingerprint` was computed; keys of other schemes never match.
  int fingerprintScheme = kFingerprintScheme;
};

/// One candidate of a request and what the verifier said about it.
struct CandidateRecord {
  std::string candidateHash; ///< SHA-256 of `source`; unique under a key
  std::string source;        ///< the candidate's CUDA source
  std::string verdictJson;   ///< Verdict::toJson() of its verdict
  VerdictStatus status = VerdictStatus::Unverified;
  std::optional<double> speedup;
  /// The kernel library's bytes. put() stores it when present; candidates()
  /// and chosen() leave it empty (see hasArtifact), artifact() reads it.
  std::optional<std::vector<uint8_t>> artifact;
  bool hasArtifact = false; ///< set on records read back
  /// Seconds since the Unix epoch; put() fills in the current time when 0.
  int64_t createdAt = 0;
};

/// Where the passes keep candidates, verdicts, libraries and choices.
/// KernelDatabase is the standard store; a driver may give the passes
/// another (see the passes' DiceServices).
class KernelStore {
public:
  virtual ~KernelStore() = default;
  /// Names the store in diagnostics.
  virtual const std::string &path() const = 0;
  virtual Status put(const KernelKey &key, const CandidateRecord &record) = 0;
  /// Stores the candidates of one request together: a reader (another
  /// process, or the run after a crash) sees all of them or none, since
  /// infill takes a key's stored candidates as the request's whole answer.
  virtual Status putAll(const KernelKey &key,
                        std::span<const CandidateRecord> records) = 0;
  virtual Result<std::vector<CandidateRecord>>
  candidates(const KernelKey &key) const = 0;
  virtual Status choose(const KernelKey &key,
                        const std::string &candidateHash) = 0;
  virtual Result<std::optional<CandidateRecord>>
  chosen(const KernelKey &key) const = 0;
  virtual Result<std::optional<std::vector<uint8_t>>>
  artifact(const KernelKey &key, const std::string &candidateHash) const = 0;
};

enum class OpenMode {
  ReadWrite, ///< creates the file and its schema when new
  ReadOnly   ///< the file must exist and be a kernel database
};

class KernelDatabase final : public KernelStore {
public:
  /// Opens `path`, creating the schema when the file is new or empty. Refuses
  /// a file that is not SQLite, a foreign SQLite database (another
  /// application_id, or tables that are not ours), a newer schema version and
  /// a file that fails `PRAGMA quick_check`.
  static Result<KernelDatabase> open(const std::string &path,
                                     OpenMode mode = OpenMode::ReadWrite,
                                     int busyTimeoutMs = 30000);

  KernelDatabase(KernelDatabase &&) noexcept;
  KernelDatabase &operator=(KernelDatabase &&) noexcept;
  ~KernelDatabase() override;

  const std::string &path() const override { return filePath; }

  /// Stores a candidate under `key`; a record with the same candidate hash
  /// is replaced (a re-verification). The verdict JSON must parse and agree
  /// with the record on fingerprint, candidate hash and status.
  Status put(const KernelKey &key, const CandidateRecord &record) override;

  /// put() of several records in one transaction: every one is stored, or
  /// (an invalid record, a failed write, a killed process) none is.
  Status putAll(const KernelKey &key,
                std::span<const CandidateRecord> records) override;

  /// Every candidate under `key`, in the order first stored, artifacts left
  /// out.
  Result<std::vector<CandidateRecord>>
  candidates(const KernelKey &key) const override;

  /// Records resolve's decision; the candidate must be stored under `key`.
  Status choose(const KernelKey &key,
                const std::string &candidateHash) override;

  /// The chosen candidate (artifact left out), or nothing when none was.
  Result<std::optional<CandidateRecord>>
  chosen(const KernelKey &key) const override;

  /// The stored kernel library of a candidate, or nothing when it has none.
  /// A candidate not stored under `key` is an error.
  Result<std::optional<std::vector<uint8_t>>>
  artifact(const KernelKey &key,
           const std::string &candidateHash) const override;

private:
  struct Closer {
    void operator()(sqlite3 *db) const;
  };

  KernelDatabase(std::string path, sqlite3 *db);
  Error errorOf(const std::string &what) const;
  /// Refuses a record whose verdict does not agree with it.
  Status checkRecord(const KernelKey &key, const CandidateRecord &record) const;

  std::string filePath;
  std::unique_ptr<sqlite3, Closer> db;
};

} // namespace dice

#endif // DICE_KERNELDB_KERNELDATABASE_H
