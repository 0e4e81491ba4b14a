set -u
R=$OUT; export DICE_COMMIT=85eb71a3b21ea79cc508f2d0c647f5b9f75ea64b
source test/gpu/build-gpu-half.sh /opt/torch/.venv/bin/python $R/build.log dice-verify-worker dice-verify DiceLightBridge || exit 1
dice_machine_info $R/machine.txt
timeout 470 /opt/torch/.venv/bin/python bench/verify_vs_load_inline.py --build build-gpu --python /opt/torch/.venv/bin/python --sequential 2 --json $R/bench.json > $R/bench.log 2>&1
echo rc=$?; tail -30 $R/bench.log
