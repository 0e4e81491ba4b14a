"""For every exported model and granularity: dice-opt's plain round trip vs
`--dice-pipeline` where no request gets a kernel. Prints one line per pair,
with the number of requests that fell back and whether the two outputs are
byte for byte the same (a unified diff follows when they are not).

    fallback_identity.py DICE_OPT MODELS_DIR EMPTY_REPLAY WORK_DIR
"""

import difflib
import subprocess
import sys
from pathlib import Path

dice_opt, models, replay, work = sys.argv[1:]
work = Path(work)
work.mkdir(parents=True, exist_ok=True)
for model in sorted(Path(models).glob("*.mlir")):
    plain = subprocess.run([dice_opt, str(model)], capture_output=True, text=True)
    if plain.returncode != 0:
        print(f"{model.name}: not parsed by dice-opt")
        continue
    for granularity in ("op", "fusion", "function"):
        db = work / f"{model.stem}-{granularity}.db"
        out = subprocess.run(
            [dice_opt, str(model), f"--dice-db={db}",
             f"--dice-pipeline=engine=replay:{replay} granularity={granularity}"],
            capture_output=True, text=True)
        if out.returncode != 0:
            print(f"{model.name} {granularity}: dice-opt failed\n{out.stderr}")
            continue
        fallbacks = out.stderr.count("remark: falling back to the original ops")
        same = out.stdout == plain.stdout
        print(f"{model.name} {granularity}: {fallbacks} fallbacks, "
              f"{'identical' if same else 'DIFFERENT'}")
        if not same:
            sys.stdout.writelines(difflib.unified_diff(
                plain.stdout.splitlines(True), out.stdout.splitlines(True),
                "plain", "pipeline"))
