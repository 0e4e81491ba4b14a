//===- fuzz_kernel_db.cpp - the kernel database's readers -----------------===//
//
// A database file that arrives damaged or foreign (copied from another
// machine, cut short, edited) must be refused with an error naming it, or
// read without crashing; opened for writing, a stored candidate must read
// back. The seeds are real databases written by `dice-db import` under the
// key below, so mutations reach the rows, not only the file header.
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"

#include "dice/KernelDB/KernelDatabase.h"
#include "dice/Scaffold/Scaffold.h"
#include "dice/Support/Sha256.h"

namespace {

dice::KernelKey seedKey() {
  dice::KernelKey key;
  key.fingerprint = "f00df00df00df00d";
  key.gpuArch = "sm_90";
  key.scaffoldVersion = dice::kScaffoldVersion;
  key.modelId = "fuzz";
  return key;
}

void readEverything(const dice::KernelDatabase &db, const dice::KernelKey &key) {
  auto records = db.candidates(key);
  if (records)
    for (const dice::CandidateRecord &record : *records) {
      DICE_FUZZ_CHECK(!record.candidateHash.empty(), "a record without a hash");
      (void)db.artifact(key, record.candidateHash);
    }
  (void)db.chosen(key);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dice::fuzz::ScratchFile file(".db");
  if (!file.write(data, size))
    return 0;
  dice::KernelKey key = seedKey();
  {
    auto db = dice::KernelDatabase::open(file.path(), dice::OpenMode::ReadOnly, 0);
    if (!db)
      DICE_FUZZ_CHECK(!db.error().file.empty() && !db.error().message.empty(),
                      "a refusal must name the file: " + db.error().format());
    else
      readEverything(*db, key);
  }
  auto db = dice::KernelDatabase::open(file.path(), dice::OpenMode::ReadWrite, 0);
  if (!db)
    return 0;
  readEverything(*db, key);
  dice::CandidateRecord record;
  record.source = "__global__ void k() {}\n";
  record.candidateHash = dice::sha256Hex(record.source);
  dice::Verdict verdict;
  verdict.fingerprint = key.fingerprint;
  verdict.candidateHash = record.candidateHash;
  verdict.status = dice::VerdictStatus::Unverified;
  verdict.reason = "no CUDA device";
  record.verdictJson = verdict.toJson();
  record.status = verdict.status;
  if (!db->put(key, record))
    return 0; // a damaged file may refuse writes; that is an error, not a crash
  auto stored = db->candidates(key);
  if (!stored) {
    // Open's quick_check does not compare indexes with their tables: a file
    // damaged there opens, takes the write, and its reads say it is damaged.
    DICE_FUZZ_CHECK(stored.error().file == file.path() &&
                        stored.error().message.find("the file is damaged") !=
                            std::string::npos,
                    "a stored candidate must read back, or the read must say "
                    "the file is damaged: " + stored.error().format());
    return 0;
  }
  bool found = false;
  for (const dice::CandidateRecord &r : *stored)
    found |= r.candidateHash == record.candidateHash && r.source == record.source;
  DICE_FUZZ_CHECK(found, "the stored candidate is missing or changed");
  return 0;
}
