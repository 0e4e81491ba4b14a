"""Runs two dice-opt processes on one kernel database at once and checks that
both succeed and that every record of both is there afterwards.

usage: check-db-concurrency.py <dice-opt> <dice-db> <input.mlir> <replay.jsonl>
                               <fake-nvcc> <workdir>
"""
import subprocess
import sys

dice_opt, dice_db, source, replay, nvcc, work = sys.argv[1:7]
db = f"{work}/shared.db"
procs = []
for granularity in ("op", "fusion"):
    # Different granularities make different requests, so both write.
    procs.append(subprocess.Popen(
        [dice_opt, source, f"--dice-db={db}", "-o", "/dev/null",
         f"--dice-pipeline=granularity={granularity} engine=replay:{replay} "
         f"nvcc={nvcc} static-analysis=false"],
        stderr=subprocess.PIPE, text=True, cwd=work))
for p in procs:
    _, err = p.communicate(timeout=600)
    if p.returncode != 0:
        sys.exit(f"dice-opt failed ({p.returncode}):\n{err}")

# The fusion run's records, written while the op run held the same file.
model = "replay:" + replay.rsplit("/", 1)[-1]
for fingerprint, count in (("b679a03703be38d7", 2), ("839eddaf27ff7c4f", 1)):
    listed = subprocess.run(
        [dice_db, "list", db, "--fingerprint", fingerprint, "--model", model],
        capture_output=True, text=True, check=True).stdout.splitlines()
    if len(listed) != count:
        sys.exit(f"{fingerprint}: expected {count} records, got {listed}")
print("both runs succeeded; records intact")
